"""Names a module offers but loads on first use (PEP 562): for package `__init__`s, whose imports every job
pays at start-up, and for PyFlink's module paths that name classes living in modules which import them.

    __getattr__ = lazy_names(__name__, {"Name": "fluvial.x.module", ...}, globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(module_name: str, sources: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module `__getattr__` importing each name from its source module once, then caching it."""

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    return __getattr__
