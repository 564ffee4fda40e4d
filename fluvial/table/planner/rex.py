"""Resolved, typed expressions (Calcite's RexNode): what the planner hands the runtime.

Rex nodes are frozen, picklable data; `fluvial.table.runtime.codegen` compiles a list of them into one Python
function when a task opens (a config object builds the logic object), so the per-record path runs plain
Python code, not a tree walk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.table.types import DataType

__all__ = ["InputRef", "Literal", "Call", "Rex", "AggCall"]


@dataclass(frozen=True, slots=True)
class InputRef:
    """Column `index` of the input row."""

    index: int
    type: DataType
    name: str

    def describe(self, names: list[str] | None = None) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any
    type: DataType

    def describe(self, names: list[str] | None = None) -> str:
        if self.value is None:
            return "null:" + str(self.type.summary(False))
        if isinstance(self.value, str):
            return f"'{self.value}'"
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Call:
    """A call of built-in function `op` (a name of `fluvial.table.functions`), or of a user function held in
    `function` (op `__udf__`)."""

    op: str
    operands: tuple[Rex, ...]
    type: DataType
    function: Any = None

    def describe(self, names: list[str] | None = None) -> str:
        inner = ", ".join(o.describe(names) for o in self.operands)
        name = getattr(self.function, "_name", None) or self.op
        return f"{name.upper() if self.function is None else name}({inner})"


Rex = InputRef | Literal | Call


@dataclass(frozen=True, slots=True)
class AggCall:
    """One aggregate of a GROUP BY or window aggregation: `kind` (COUNT, SUM, ...) over argument columns of
    the input (no columns: COUNT(*)), optionally DISTINCT."""

    kind: str
    args: tuple[int, ...]
    type: DataType
    name: str
    distinct: bool = False
    arg_types: tuple[DataType, ...] = ()
    filter_arg: int | None = None
    function: Any = None  # kind UDAF: the udaf's wrapper (fluvial.table.udf)

    def describe(self, names: list[str]) -> str:
        inner = ", ".join(names[a] for a in self.args) if self.args else "*"
        if self.distinct:
            inner = "DISTINCT " + inner
        kind = self.kind if self.function is None else self.function._name
        return f"{kind}({inner})"
