"""Window table functions as tables, and window joins (Flink's WindowTableFunction over TUMBLE/HOP/CUMULATE, and
WindowJoin).

`SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND))` is t's rows with window_start,
window_end and window_time after their columns (one row per window the row falls in: several for HOP and
CUMULATE); window_time is a time attribute, and so stays the input's rowtime, as in Flink.

A join of two such tables whose condition equates both window_start and window_end (besides any keys) is a
window join: each side's rows wait, per key and window, until the watermark passes the window's end, then the
window's rows join (inner, or outer with NULL padding) and its state is cleared. Its output is insert-only.
Both sides must use the same window function, as Flink requires.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Calc, ChangelogMode, Column, Join, RelNode, SingleRel, WindowKind, WindowSpec
from fluvial.table.planner.rex import InputRef
from fluvial.table.types import DataTypes

__all__ = ["WindowAssign", "WindowJoin", "window_table", "as_window_join"]


@dataclass(frozen=True)
class WindowAssign(SingleRel):
    """TUMBLE/HOP/CUMULATE as a table: the input's columns, then window_start, window_end, window_time."""

    window: WindowSpec = None  # type: ignore[assignment]

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.INSERT_ONLY

    def explain_terms(self) -> str:
        return f"WindowTableFunction(window=[{self.window.describe(self.input.names)}])"


@dataclass(frozen=True)
class WindowJoin(Join):
    """A join per key and window; `left_window`/`right_window` are each side's (window_start, window_end)."""

    window: WindowSpec = None  # type: ignore[assignment]
    left_window: tuple[int, int] = (0, 0)
    right_window: tuple[int, int] = (0, 0)

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.INSERT_ONLY

    def explain_terms(self) -> str:
        kind = {"INNER": "InnerJoin", "LEFT": "LeftOuterJoin", "RIGHT": "RightOuterJoin", "FULL": "FullOuterJoin"}
        window = self.window.describe(self.left.names)
        return (
            f"WindowJoin(leftWindow=[{window}], joinType=[{kind[self.join_type]}], where=[{self.condition_text}], "
            f"select=[{', '.join(self.names)}])"
        )


def window_table(input_node: RelNode, spec: WindowSpec) -> WindowAssign:
    """The window table function `spec` over `input_node`, as a table."""
    if spec.kind is WindowKind.SESSION:
        raise ValidationException(
            "a SESSION window table function is planned with its aggregation only; aggregate over it, or use "
            "TUMBLE, HOP or CUMULATE as a table"
        )
    columns = list(input_node.schema)
    bound = DataTypes.TIMESTAMP(3, False)
    window_time = replace(input_node.schema[spec.time_index].type, nullable=False)
    if window_time.time_attribute == "PROCTIME":
        # over processing time, Flink materializes the times: the rows' windows are fixed by their arrival, and
        # neither the time column nor window_time is a time attribute any more
        window_time = replace(window_time, time_attribute=None)
        columns = [Column(c.name, replace(c.type, time_attribute=None)) for c in columns]
    columns += [Column("window_start", bound), Column("window_end", bound), Column("window_time", window_time)]
    return WindowAssign(tuple(columns), input_node, spec)


def _window_origin(node: RelNode, index: int) -> tuple[WindowAssign, str] | None:
    """The WindowAssign whose window_start/window_end column `index` of `node` is, through projections."""
    while isinstance(node, Calc):
        if node.projections is None:
            node = node.input
            continue
        rex = node.projections[index]
        if not isinstance(rex, InputRef):
            return None
        node, index = node.input, rex.index
    if isinstance(node, WindowAssign):
        name = node.names[index]
        width = len(node.input.schema)
        if index in (width, width + 1):
            return node, name
    return None


def as_window_join(join: Join) -> Join:
    """`join` as a WindowJoin when its keys equate both sides' window_start and window_end; else `join`."""
    starts: tuple[int, int] | None = None
    ends: tuple[int, int] | None = None
    specs = []
    for left_key, right_key in zip(join.left_keys, join.right_keys):
        left, right = _window_origin(join.left, left_key), _window_origin(join.right, right_key)
        if left is None or right is None or left[1] != right[1]:
            continue
        specs.append((left[0], right[0]))
        if left[1] == "window_start":
            starts = (left_key, right_key)
        else:
            ends = (left_key, right_key)
    if starts is None or ends is None:
        return join
    left_assign, right_assign = specs[0]
    left_spec, right_spec = left_assign.window, right_assign.window
    if _proctime(left_assign) or _proctime(right_assign):
        raise ValidationException(
            "Processing time Window Join is not supported yet, as in Flink: use windows over a rowtime "
            "(WATERMARK FOR ...), or an interval join on the processing-time attributes (l.p BETWEEN r.p - "
            "INTERVAL ... AND r.p)"
        )
    if _shape(left_spec) != _shape(right_spec):
        raise ValidationException(
            "a window join needs the same window table function on both inputs (kind, size, slide and offset); "
            f"they are {left_spec.kind.name} and {right_spec.kind.name} of different shapes"
        )
    return WindowJoin(
        join.schema,
        join.left,
        join.right,
        join.join_type,
        join.left_keys,
        join.right_keys,
        join.condition,
        join.condition_text,
        left_spec,
        (starts[0], ends[0]),
        (starts[1], ends[1]),
    )


def _proctime(assign: WindowAssign) -> bool:
    return assign.input.schema[assign.window.time_index].type.time_attribute == "PROCTIME"


def _shape(spec: WindowSpec) -> tuple:
    return spec.kind, spec.size, spec.slide, spec.offset
