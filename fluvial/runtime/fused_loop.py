"""The generated loop of a fused chain run: one Python `for` over a buffer that applies every member's function in
turn, so a run of operators builds one list per buffer instead of one per operator, and its Python-to-Python
calls are the ones CPython 3.11 inlines (a `map()` over the same functions is about a fifth slower).

    for v in values:
        k = key(v); p = get(k, missing)          # a keyed reduce at the head of the run:
        if p is not missing: v = f0(p, v)        #   the running aggregate replaces v
        table[k] = v
        v = f1(v)                                # map
        if not f2(v): continue                   # filter
        for v in f3(v):                          # flat_map: the steps after it run per result
            ...
            append(v)                            # (a flat_map that ends the run: extend(f3(v)))

The loop checks nothing per record beyond what the operators do: a flat_map that returns None, or a key that
cannot be hashed, fails inside the loop itself, and `explain_loop_failure` turns that error into the one the
separate operator would have raised, naming it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from types import CodeType
from typing import Any, Protocol, cast

from fluvial.common.errors import InvalidJobError
from fluvial.runtime.operators.base import explain_unhashable_key, label_failure


class Step(enum.Enum):
    """What one member of a fused run does to each value."""

    REDUCE = "reduce"  # fold it into its key's running aggregate, which replaces it (head of a run only)
    MAP = "map"  # replace it
    FILTER = "filter"  # keep it or drop it
    FLAT_MAP = "flat_map"  # replace it by zero or more values, each going through the steps after


_MISSING = object()


class FusedRun(Protocol):
    """What `fused_loop` returns: `run(values) -> list`, carrying what names the member that raised in it —
    `loop_code`, the generated loop's code object, and `member_at_line`, its line → the member called there."""

    member_at_line: dict[int, str]
    loop_code: CodeType

    def __call__(self, values: Any, /) -> list[Any]: ...


def returned_none(operator: str, value: Any) -> None:
    error = InvalidJobError(
        f"the flat_map function of '{operator}' returned None for {value!r}: return an iterable or yield"
    )
    label_failure(error, operator)
    raise error


def fused_loop(
    steps: list[Step],
    functions: list[Callable[..., Any]],
    names: list[str],
    key: Callable[[Any], Any] | None = None,
    table: dict[Any, Any] | None = None,
    key_name: str | None = None,
) -> FusedRun:
    """`run(values) -> list` applying the steps in order (see the module docstring). A REDUCE step, first only,
    needs the reduce's `key` function and its state `table` (a dict: the loop touches it per record), and
    `key_name`: whose failure a failing key is (the key_by's)."""
    defaults: dict[str, object] = {f"f{index}": fn for index, fn in enumerate(functions)}
    lines = ["    out = []", "    append = out.append", "    extend = out.extend", "    for v in values:"]
    indent = "        "
    for index, step in enumerate(steps):
        if step is Step.REDUCE:
            if index != 0 or table is None:
                raise ValueError("a fused reduce must head its run and come with its state table")
            defaults.update(key=key, get=table.get, table=table, missing=_MISSING)
            lines += [
                f"{indent}k = key(v)",
                f"{indent}p = get(k, missing)",
                f"{indent}if p is not missing:",
                f"{indent}    v = f0(p, v)",
                f"{indent}table[k] = v",
            ]
        elif step is Step.MAP:
            lines.append(f"{indent}v = f{index}(v)")
        elif step is Step.FILTER:
            lines += [f"{indent}if not f{index}(v):", f"{indent}    continue"]
        elif index == len(steps) - 1:
            lines.append(f"{indent}extend(f{index}(v))")
            break
        else:
            lines.append(f"{indent}for v in f{index}(v):")
            indent += "    "
    else:
        lines.append(f"{indent}append(v)")
    lines.append("    return out")
    # the functions are parameters with defaults: locals are the fastest lookups there are
    lines.insert(0, f"def run(values, {', '.join(f'{name}={name}' for name in defaults)}):")
    namespace: dict[str, Any] = dict(defaults)
    exec("\n".join(lines), namespace)  # noqa: S102 - the source is built here from a fixed template
    run: FusedRun = namespace["run"]
    run.member_at_line = _member_at_line(lines, names, key_name or names[0])
    run.loop_code = namespace["run"].__code__
    if Step.REDUCE not in steps and Step.FLAT_MAP not in steps:
        return run

    def checked_run(values: Any) -> list[Any]:
        try:
            return run(values)
        except TypeError as error:
            explain_loop_failure(error, run.loop_code, lines, steps, names, key_name or names[0])
            raise

    checked = cast(FusedRun, checked_run)  # a function object takes attributes: these two make it a FusedRun
    checked.member_at_line, checked.loop_code = run.member_at_line, run.loop_code
    return checked


def _member_at_line(lines: list[str], names: list[str], key_name: str) -> dict[int, str]:
    """Line of the generated source (1-based) → the member whose function that line calls (or the key_by, for
    the line that calls the key): what names the member that raised, exactly, even when several members run the
    same function."""
    at_line: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        called = re.search(r"\bf(\d+)\(|\bkey\(", line)
        if called:
            at_line[number] = names[int(called.group(1))] if called.group(1) else key_name
    return at_line


def explain_loop_failure(
    error: TypeError, code: CodeType, lines: list[str], steps: list[Step], names: list[str], key_name: str
) -> None:
    """A TypeError raised by the generated loop itself (not by a user function it called): a flat_map result
    that cannot be iterated (labelled with that flat_map; None gets the error naming operator and value), or a
    reduce key that cannot be hashed (the key_by error, labelled as the key_by)."""
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_next is not None:
        traceback = traceback.tb_next
    if traceback is None or traceback.tb_frame.f_code is not code:
        return
    source = lines[traceback.tb_lineno - 1]
    local = traceback.tb_frame.f_locals
    if "get(k, missing)" in source:
        label_failure(error, key_name)
        try:
            explain_unhashable_key(error, local.get("k"))
        except InvalidJobError as unhashable:
            label_failure(unhashable, key_name)
            raise
    for index, step in enumerate(steps):
        if step is Step.FLAT_MAP and f"f{index}(v)" in source:
            if "NoneType" in str(error):
                returned_none(names[index], local.get("v"))
            label_failure(error, names[index])
