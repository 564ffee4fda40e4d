"""The public API the reference documents: every name of PyFlink's DataStream-side modules
(`/work/shared/pyflink_surface.txt`, kept here as `pyflink_surface.txt`) at fluvial's path, plus fluvial's own
public modules, with each public method those classes define. `undocumented()` lists the ones without a
docstring; the docstring-coverage test fails on any not in the known list, so new API comes documented."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SURFACE = Path(__file__).with_name("pyflink_surface.txt")

# fluvial's own public modules, documented like PyFlink's.
OWN_MODULES = ("fluvial.testing",)


def surface_names() -> list[tuple[str, str]]:
    """(fluvial module, name) of every counted line of the PyFlink surface."""
    names = []
    for line in SURFACE.read_text().splitlines():
        if not line or line.startswith(("#", "skipped")):
            continue
        module, _, name = line.partition(":")
        names.append((module.strip().replace("pyflink", "fluvial", 1), name.strip()))
    return names


def _own_names() -> Iterator[tuple[str, str]]:
    for module_name in OWN_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            yield module_name, name


def _defined_methods(cls: type) -> Iterator[tuple[str, Any]]:
    """The public methods, properties, class and static methods `cls` defines itself (not inherited)."""
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        if isinstance(function, property) or inspect.isfunction(function):
            yield name, function


def _has_doc(obj: Any) -> bool:
    return bool((getattr(obj, "__doc__", None) or "").strip())


def public_objects() -> Iterator[tuple[str, Any]]:
    """(qualified name, object) of every public name and every method of its classes, each once."""
    seen: set[int] = set()
    for module_name, name in [*surface_names(), *_own_names()]:
        obj = getattr(importlib.import_module(module_name), name)
        if id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # a constant, a type alias, or a name re-exported by a second module
        seen.add(id(obj))
        qualified = f"{obj.__module__}.{obj.__qualname__}"
        yield qualified, obj
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for method_name, method in _defined_methods(obj):
                if id(method) not in seen:
                    seen.add(id(method))
                    yield f"{qualified}.{method_name}", method


def undocumented() -> list[str]:
    """The qualified names of the public classes, functions and methods without a docstring."""
    missing = []
    for qualified, obj in public_objects():
        if inspect.isclass(obj) and obj.__doc__ is not None and obj.__doc__.startswith(obj.__name__ + "("):
            missing.append(qualified)  # a dataclass's generated "Name(field, ...)" says nothing
        elif not _has_doc(obj):
            missing.append(qualified)
    return sorted(set(missing))
