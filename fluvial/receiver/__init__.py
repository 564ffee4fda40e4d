"""Receivers: push sources batched into blocks, stored (optionally through a write-ahead log) and tracked, so
a source that cannot replay loses nothing (DESIGN 2.5, seed 004).

Names load on first use (PEP 562), so a job without receivers never loads the receiver machinery.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BlockGenerator": "fluvial.receiver.block_generator",
    "BlockGeneratorListener": "fluvial.receiver.block_generator",
    "Receiver": "fluvial.datastream.connectors.receiver",
    "ReceiverStoppedError": "fluvial.datastream.connectors.receiver",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fluvial.receiver' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
