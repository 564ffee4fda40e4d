"""Compiles rex trees into Python functions, once per task (Flink's code generation, in Python).

`compile_calc(projections, condition)` returns `f(values) -> list | None`: the projected values, or None
when the condition is not TRUE. The generated source is one expression per output column; built-in
functions are reached through a namespace of bound callables, and strict functions get their NULL check
inline, so a record costs one Python call per function, no tree walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from fluvial.common.row import Row, RowKind
from fluvial.table.builtins import BUILTINS
from fluvial.table.errors import TableException
from fluvial.table.planner.rex import Call, InputRef, Literal, Rex
from fluvial.table.values import cast_value

__all__ = ["compile_calc", "compile_expression", "lift_calls", "calls_any", "Compiled"]


class _Generator:
    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"Row": Row, "RowKind": RowKind, "_and": _and, "_or": _or}
        self.counter = 0

    def bind(self, value: Any) -> str:
        name = f"_c{self.counter}"
        self.counter += 1
        self.namespace[name] = value
        return name

    def gen(self, rex: Rex) -> str:
        if isinstance(rex, InputRef):
            return f"v[{rex.index}]"
        if isinstance(rex, Literal):
            if rex.value is None or isinstance(rex.value, (bool, int, float)):
                return repr(rex.value)
            return self.bind(rex.value)
        return self.call(rex)

    def call(self, rex: Call) -> str:
        op = rex.op
        args = [self.gen(o) for o in rex.operands]
        if op == "and":
            return f"_and({args[0]}, {args[1]})"
        if op == "or":
            return f"_or({args[0]}, {args[1]})"
        if op == "is_null":
            return f"({args[0]} is None)"
        if op == "is_not_null":
            return f"({args[0]} is not None)"
        if op == "is_true":
            return f"({args[0]} is True)"
        if op == "is_false":
            return f"({args[0]} is False)"
        if op == "is_not_true":
            return f"({args[0]} is not True)"
        if op == "is_not_false":
            return f"({args[0]} is not False)"
        if op == "if":
            return f"({args[1]} if {args[0]} is True else {args[2]})"
        if op == "case":
            # operands: cond1, value1, cond2, value2, ..., else
            text = args[-1]
            for i in range(len(args) - 3, -1, -2):
                text = f"({args[i + 1]} if {args[i]} is True else {text})"
            return text
        if op == "in":
            return f"{self.bind(_in)}({args[0]}, ({', '.join(args[1:])},))"
        if op in ("cast", "try_cast"):
            target = self.bind(rex.type)
            source = self.bind(rex.operands[0].type)
            return f"{self.bind(cast_value)}({args[0]}, {target}, {source}, {op == 'try_cast'})"
        if op == "get_field":
            return f"({args[0]}[{args[1]}] if {args[0]} is not None else None)"
        if op == "row":
            return f"Row({', '.join(args)})"
        if op == "element_at" or op == "item":
            return f"{self.bind(_item)}({args[0]}, {args[1]})"
        if op == "__field__":
            return f"{self.bind(_field)}({args[0]}, {args[1]})"
        if op == "__udf__":
            if getattr(rex.function, "_async", False):
                raise TableException(
                    f"The async scalar function '{rex.function._name}' can be called in a projection or a filter "
                    "(SELECT or WHERE) only: compute it in a subquery's select list and use that column here"
                )
            function = self.bind(rex.function._invoke)
            return f"{function}({', '.join(args)})"
        builtin = BUILTINS[op]
        impl = self.bind(builtin.impl)
        if not builtin.strict or not args:
            text = f"{impl}({', '.join(args)})"
        elif len(args) == 1:
            text = f"{self.bind(_strict1(builtin.impl))}({args[0]})"
        else:
            text = f"{self.bind(_strict(builtin.impl))}({', '.join(args)})"
        if rex.type.name == "DECIMAL" and op in _DECIMAL_ARITHMETIC:
            text = f"{self.bind(_decimal_rounder(rex.type.scale or 0))}({text})"
        return text


_DECIMAL_ARITHMETIC = frozenset({"plus", "minus", "times", "divide", "mod", "minus_prefix"})


def _decimal_rounder(scale: int) -> Callable[[Any], Any]:
    """A DECIMAL result rounded HALF_UP to its type's scale (Flink's DecimalData arithmetic)."""
    from decimal import ROUND_HALF_UP, Decimal

    unit = Decimal(1).scaleb(-scale)

    def run(value: Any) -> Any:
        if value is None:
            return None
        return Decimal(value).quantize(unit, rounding=ROUND_HALF_UP)

    return run


def _strict1(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(a: Any) -> Any:
        return None if a is None else function(a)

    return run


def _strict(function: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        for a in args:
            if a is None:
                return None
        return function(*args)

    return run


def _and(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a: Any, b: Any) -> Any:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _in(value: Any, options: tuple) -> Any:
    if value is None:
        return None
    if value in options:
        return True
    return None if None in options else False


def _field(row: Any, index: int) -> Any:
    """Field `index` of a ROW value (a Row, tuple or list), None for a NULL row."""
    return None if row is None else row[index]


def _item(container: Any, key: Any) -> Any:
    if container is None or key is None:
        return None
    if isinstance(container, list):
        return container[key - 1] if 1 <= key <= len(container) else None
    return container.get(key)


Compiled = Callable[[Sequence[Any]], Any]


def compile_calc(projections: Sequence[Rex] | None, condition: Rex | None) -> Compiled:
    """`f(values)`: the projected values as a list (all values when `projections` is None), or None when the
    condition is not TRUE."""
    generator = _Generator()
    lines = ["def calc(v):"]
    if condition is not None:
        lines.append(f"    if ({generator.gen(condition)}) is not True:")
        lines.append("        return None")
    if projections is None:
        lines.append("    return list(v)")
    else:
        lines.append(f"    return [{', '.join(generator.gen(p) for p in projections)}]")
    exec("\n".join(lines), generator.namespace)  # noqa: S102 - source built from the planner's own rex nodes
    return generator.namespace["calc"]


def compile_expression(rex: Rex) -> Compiled:
    """`f(values)`: one expression's value."""
    generator = _Generator()
    exec(f"def expr(v):\n    return {generator.gen(rex)}", generator.namespace)  # noqa: S102
    return generator.namespace["expr"]


def lift_calls(
    projections: Sequence[Rex] | None, condition: Rex | None, width: int, batched: Callable[[Call], bool]
) -> tuple[list[tuple[Call, Compiled]], Compiled]:
    """A Calc whose `batched` calls are evaluated apart from the row (per buffer: pandas udfs; per row on an
    event loop: async udfs): each such call, its operands already lifted, with its operands' compiled evaluator,
    in the order to evaluate them (a call nested in another's operands first); and the rest of the Calc compiled
    over the row's values extended by those calls' results (call i's result is column `width + i`)."""
    calls: list[tuple[Call, Compiled]] = []
    seen: dict[int, int] = {}

    def lift(rex: Rex) -> Rex:
        if not isinstance(rex, Call):
            return rex
        lifted = replace(rex, operands=tuple(lift(o) for o in rex.operands))
        if not batched(rex):
            return lifted
        if id(rex) not in seen:
            seen[id(rex)] = width + len(calls)
            calls.append((lifted, compile_calc(lifted.operands, None)))
        return InputRef(seen[id(rex)], rex.type, f"$lifted{seen[id(rex)]}")

    lifted_projections = (
        [InputRef(i, None, "") for i in range(width)]  # type: ignore[arg-type]
        if projections is None
        else [lift(p) for p in projections]
    )
    lifted_condition = None if condition is None else lift(condition)
    return calls, compile_calc(lifted_projections, lifted_condition)


def calls_any(rex: Rex | None, matches: Callable[[Call], bool]) -> bool:
    """Whether `rex` has a call `matches` accepts, at any depth."""
    if not isinstance(rex, Call):
        return False
    return matches(rex) or any(calls_any(o, matches) for o in rex.operands)
