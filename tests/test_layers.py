"""The layer rule of DESIGN.md section 1: imports only point down.

Each top package of fluvial has a rank; a module may import its own package and any package of a lower rank.
The one sanctioned step up is the environment handing a finished plan to the executor chosen by
`execution.target`, inside the function that submits (`SUBMITTING`). `KNOWN_UPWARD` lists what still breaks the
rule, each with the issue that removes it; the test also fails when one of them is gone, so the list stays
exact and shrinks.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fluvial"

RANK = {
    "common": 0,
    "datastream": 1,
    "metrics": 1,
    "graph": 2,
    "state": 2,
    "checkpoint": 2,
    "receiver": 2,
    "table": 2,
    "runtime": 3,
    "cluster": 4,
    "testing": 4,
    "web": 5,
    "cli": 6,
}
TOP_MODULES = {"__init__", "__main__"}  # fluvial/__init__.py and fluvial/__main__.py sit above every layer

# (importing module, imported package): function-local imports that submit a finished plan (DESIGN 1).
SUBMITTING = {("fluvial.datastream.stream_execution_environment", "cluster")}

# (importing module, imported module) -> why it is still here. Remove an entry with the import it names.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # the imported module, dotted
    line: int
    local: bool  # inside a function


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[Import]:
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend(Import(module, alias.name, child.lineno, local) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                found.append(Import(module, target, child.lineno, local))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _layer(dotted: str) -> str | None:
    parts = dotted.split(".")
    if parts[0] != "fluvial" or len(parts) < 2:
        return None
    return parts[1]


def _upward_imports() -> list[Import]:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for found in _imports(path):
            mine, theirs = _layer(found.module), _layer(found.target)
            if mine is None or theirs is None or mine in TOP_MODULES or mine == theirs:
                continue
            if mine not in RANK or theirs not in RANK:
                pytest.fail(
                    f"{found.module} or {found.target} is in a package without a rank in DESIGN.md's "
                    f"layer order: add it to RANK in {Path(__file__).name} (and to DESIGN.md)"
                )
            if RANK[theirs] < RANK[mine] or (RANK[theirs] == RANK[mine] and mine != "common"):
                continue
            if found.local and (found.module, theirs) in SUBMITTING:
                continue
            upward.append(found)
    return upward


def test_imports_point_down_the_layers():
    unexpected = [
        f"{i.module}:{i.line} imports {i.target}" for i in _upward_imports() if (i.module, i.target) not in KNOWN_UPWARD
    ]
    assert not unexpected, (
        "imports that point up the layer order of DESIGN.md section 1 (common <- datastream, "
        "metrics <- graph, state, checkpoint, receiver, table <- runtime <- cluster, testing "
        "<- web <- cli):\n  " + "\n  ".join(unexpected)
    )


def test_the_list_of_known_upward_imports_is_exact():
    still_there = {(i.module, i.target) for i in _upward_imports()}
    gone = [f"{module} -> {target}" for module, target in KNOWN_UPWARD if (module, target) not in still_there]
    assert not gone, "these imports no longer point up; remove them from KNOWN_UPWARD: " + ", ".join(gone)


def test_common_imports_nothing_else_of_fluvial():
    """DESIGN.md: `common` imports nothing else of fluvial (metrics has the same rank, but not this freedom)."""
    offenders = [
        f"{i.module}:{i.line} imports {i.target}"
        for path in sorted((PACKAGE / "common").rglob("*.py"))
        for i in _imports(path)
        if _layer(i.target) not in (None, "common")
    ]
    assert not offenders, "\n".join(offenders)
