"""Every name of PyFlink's DataStream-side surface (`tests/pyflink_surface.txt`, a copy of
shared/pyflink_surface.txt) imports from the same module path under `fluvial`.

Names whose implementation is still pending are listed in PENDING with what is missing: they are expected to
fail to import (xfail, strict), so the day they land the test turns red until the entry is removed.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

SURFACE = Path(__file__).with_name("pyflink_surface.txt")

PENDING: dict[tuple[str, str], str] = {}


def surface() -> list[tuple[str, str]]:
    names = []
    for line in SURFACE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "skipped")):
            continue
        module, name = (part.strip() for part in line.split(":"))
        names.append((module, name))
    return names


def test_the_copy_lists_what_pyflink_has():
    names = surface()
    assert len(names) == 282 and len(set(names)) == len(names)


def _params():
    for module, name in surface():
        marks = []
        if (module, name) in PENDING:
            marks.append(
                pytest.mark.xfail(strict=True, raises=(ImportError, AttributeError), reason=PENDING[(module, name)])
            )
        yield pytest.param(module, name, marks=marks, id=f"{module}:{name}")


@pytest.mark.parametrize("module, name", list(_params()))
def test_name_imports_at_its_pyflink_path(module, name):
    fluvial_module = importlib.import_module(module.replace("pyflink", "fluvial", 1))
    value = getattr(fluvial_module, name)
    assert value is not None


# Java connectors of PyFlink (the `skipped` lines) that fluvial implements in Python: every name of theirs imports.
IMPLEMENTED_CONNECTORS = ("pyflink.datastream.connectors.kafka", "pyflink.datastream.connectors.jdbc")


def _implemented_connector_names() -> list[tuple[str, str]]:
    names = []
    for line in SURFACE.read_text().splitlines():
        if line.startswith("skipped "):
            module, name = (part.strip() for part in line.removeprefix("skipped ").split(":"))
            if module in IMPLEMENTED_CONNECTORS:
                names.append((module, name))
    return names


def test_the_java_connectors_fluvial_implements_are_listed():
    assert {module for module, _ in _implemented_connector_names()} == set(IMPLEMENTED_CONNECTORS)


@pytest.mark.parametrize(("module", "name"), _implemented_connector_names())
def test_an_implemented_connectors_name_imports_at_its_pyflink_path(module: str, name: str) -> None:
    ours = importlib.import_module(module.replace("pyflink", "fluvial", 1))
    assert hasattr(ours, name), f"{module}.{name} has no fluvial counterpart"
