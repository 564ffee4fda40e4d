"""Every Python example of the docs site runs, so the docs never drift from the code.

Each ```python block of every page under docs/ is executed as it stands, in a fresh namespace, in a temporary
working directory; the `test_*` functions a block defines are then called as pytest would (parametrize marks
expanded, a fresh `tmp_path` each), which is how docs/testing.md's examples test themselves. A block that
needs a server the suite does not start for the docs (a Kafka broker, a PostgreSQL database) is fenced
```python title="needs ..."``` and its imports are executed instead: the names it uses exist where it says.
Shell blocks (```shell```, plain ```) are commands for a terminal and are not run.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs"
FENCE = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<source>.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Example:
    page: Path
    number: int
    source: str
    needs: str | None  # what the block needs to run, when the suite does not provide it

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(DOCS)}#{self.number}"


def _examples() -> list[Example]:
    examples = []
    for page in sorted(DOCS.rglob("*.md")):
        for number, match in enumerate(FENCE.finditer(page.read_text()), start=1):
            needs = re.search(r'title="needs ([^"]+)"', match["info"])
            examples.append(Example(page, number, match["source"], needs[1] if needs else None))
    return examples


EXAMPLES = _examples()


def _calls(function):
    """The keyword arguments of every call pytest would make of `function` (its parametrize marks expanded)."""
    axes = []
    for mark in getattr(function, "pytestmark", []):
        assert mark.name == "parametrize", f"docs examples may only use parametrize, not {mark.name}"
        names = [name.strip() for name in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
        axes.append([dict(zip(names, values if len(names) > 1 else (values,))) for values in mark.args[1]])
    for combination in itertools.product(*axes):
        yield {key: value for part in combination for key, value in part.items()}


def _imports_only(source: str) -> str:
    tree = ast.parse(source)
    return "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))


def test_every_page_with_code_has_runnable_examples() -> None:
    assert len([e for e in EXAMPLES if e.needs is None]) >= 20, "the docs teach by examples that run"
    assert any(e.page.name == "testing.md" for e in EXAMPLES)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
def test_example(example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = example.source if example.needs is None else _imports_only(example.source)
    filename = f"{example.page}#example-{example.number}"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # readable tracebacks
    namespace = {"__name__": f"docs_example_{example.page.stem}_{example.number}".replace("-", "_")}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own docs
    tests = [function for name, function in namespace.items() if name.startswith("test_") and callable(function)]
    for number, (function, arguments) in enumerate((f, a) for f in tests for a in _calls(f)):
        if "tmp_path" in inspect.signature(function).parameters:
            arguments["tmp_path"] = tmp_path / f"call-{number}"
            arguments["tmp_path"].mkdir()
        function(**arguments)
