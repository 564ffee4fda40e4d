"""Every example of docs/testing.md runs: each ```python block is executed as it stands, and the `test_*`
functions it defines are called as pytest would (parametrize marks expanded, a fresh `tmp_path` each)."""

from __future__ import annotations

import inspect
import itertools
import linecache
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "testing.md"
EXAMPLES = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.S | re.M)


def _calls(function):
    """The keyword arguments of every call pytest would make of `function` (its parametrize marks expanded)."""
    axes = []
    for mark in getattr(function, "pytestmark", []):
        assert mark.name == "parametrize", f"docs examples may only use parametrize, not {mark.name}"
        names = [name.strip() for name in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
        axes.append([dict(zip(names, values if len(names) > 1 else (values,))) for values in mark.args[1]])
    for combination in itertools.product(*axes):
        yield {key: value for part in combination for key, value in part.items()}


def test_the_page_has_examples() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.timeout(120)
@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[f"example-{i + 1}" for i in range(len(EXAMPLES))])
def test_example(index: int, tmp_path: Path) -> None:
    namespace = {"__name__": f"docs_testing_example_{index + 1}"}
    source, filename = EXAMPLES[index], f"{DOC}#example-{index + 1}"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # readable tracebacks
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own docs
    tests = [function for name, function in namespace.items() if name.startswith("test_") and callable(function)]
    for number, (function, arguments) in enumerate((f, a) for f in tests for a in _calls(f)):
        if "tmp_path" in inspect.signature(function).parameters:
            arguments["tmp_path"] = tmp_path / f"call-{number}"
            arguments["tmp_path"].mkdir()
        function(**arguments)
