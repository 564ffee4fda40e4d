"""Connectors (PyFlink `pyflink.datastream.connectors`), including the names older programs import from this
package directly. Names load on first use, so a job pays only for the connectors it names."""

from __future__ import annotations

import importlib
from typing import Any

_BASE = "fluvial.datastream.connectors.base"
_FILES = "fluvial.datastream.connectors.file_system"
_EXPORTS = {
    "Source": _BASE,
    "Sink": _BASE,
    "DeliveryGuarantee": _BASE,
    "NumberSequenceSource": "fluvial.datastream.connectors.number_seq",
    "HybridSource": "fluvial.datastream.connectors.hybrid_source",
    **{name: _FILES for name in (
        "OutputFileConfig", "FileSource", "FileSourceBuilder", "FileSink", "StreamingFileSink", "StreamFormat",
        "BulkFormat", "FileEnumeratorProvider", "FileSplitAssignerProvider", "RollingPolicy", "BucketAssigner",
        "FileCompactor", "FileCompactStrategy",
    )},
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fluvial.datastream.connectors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
