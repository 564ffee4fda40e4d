"""Window table functions' rows and the window join (Flink's WindowTableFunctionOperator and WindowJoinOperator).

`WindowAssignFunction` gives each row its windows (TUMBLE: one; HOP: size/slide; CUMULATE: the growing windows
of its period that end after it) with window_start, window_end and window_time after its columns.

`WindowJoinFunction` runs keyed by the join keys, which include both window columns, so a key holds one
window: each side's rows wait in a ListState-like ValueState until an event-time timer at the window's last
millisecond; then the window's rows join and the state is cleared. A row whose window the watermark has
already passed is late and dropped, as Flink's window join drops it. Checkpointed like every keyed operator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import FlatMapFunction, KeyedCoProcessFunction
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.table.planner.logical import WindowKind, WindowSpec
from fluvial.table.planner.rex import Rex
from fluvial.table.runtime.codegen import compile_expression
from fluvial.table.values import epoch_millis, from_epoch_millis

__all__ = ["WindowAssignFunction", "WindowJoinFunction", "window_bounds"]


def window_bounds(spec: WindowSpec, time: int) -> list[tuple[int, int]]:
    """The windows (start, end) of `spec` that a row at `time` (ms) falls in."""
    if spec.kind is WindowKind.TUMBLE:
        start = time - (time - spec.offset) % spec.size
        return [(start, start + spec.size)]
    if spec.kind is WindowKind.HOP:
        last = time - (time - spec.offset) % spec.slide
        return [(s, s + spec.size) for s in range(last, time - spec.size, -spec.slide)]
    start = time - (time - spec.offset) % spec.size  # CUMULATE: slide is the step
    return [(start, end) for end in range(start + spec.slide, start + spec.size + 1, spec.slide) if end > time]


class WindowAssignFunction(FlatMapFunction):
    def __init__(self, names: Sequence[str], spec: WindowSpec) -> None:
        self.names = list(names)
        self.spec = spec

    def flat_map(self, value: Row) -> Iterable[Row]:
        values = list(value._values)
        stamp = values[self.spec.time_index]
        if stamp is None:
            return
        for start, end in window_bounds(self.spec, epoch_millis(stamp)):
            bounds = [from_epoch_millis(start), from_epoch_millis(end), from_epoch_millis(end - 1)]
            yield _create_row(self.names, values + bounds, RowKind.INSERT)


class WindowJoinFunction(KeyedCoProcessFunction):
    def __init__(
        self,
        names: Sequence[str],
        widths: tuple[int, int],
        ends: tuple[int, int],
        join_type: str,
        condition: Rex | None,
    ) -> None:
        self.names = list(names)
        self.widths = widths
        self.ends = ends  # each side's window_end column
        self.join_type = join_type
        self.condition = condition
        self._states: Any = None
        self._condition: Any = None

    def open(self, runtime_context: Any) -> None:
        self._states = tuple(
            runtime_context.get_state(ValueStateDescriptor(f"window-join-{side}")) for side in ("left", "right")
        )
        self._condition = compile_expression(self.condition) if self.condition is not None else None

    def process_element1(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 0, ctx)

    def process_element2(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 1, ctx)

    def _process(self, row: Row, side: int, ctx: Any) -> list[Row]:
        values = tuple(row._values)
        last = epoch_millis(values[self.ends[side]]) - 1
        timers = ctx.timer_service()
        if last <= timers.current_watermark():
            return []  # late: its window has fired
        state = self._states[side]
        rows = state.value() or []
        rows.append(values)
        state.update(rows)
        timers.register_event_time_timer(last)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        left, right = (s.value() or [] for s in self._states)
        for s in self._states:
            s.clear()
        out: list[Row] = []
        right_matched = [False] * len(right)
        for lv in left:
            matched = False
            for i, rv in enumerate(right):
                joined = [*lv, *rv]
                if self._condition is None or self._condition(joined) is True:
                    out.append(_create_row(self.names, joined, RowKind.INSERT))
                    matched = right_matched[i] = True
            if not matched and self.join_type in ("LEFT", "FULL"):
                out.append(_create_row(self.names, [*lv, *([None] * self.widths[1])], RowKind.INSERT))
        if self.join_type in ("RIGHT", "FULL"):
            for rv, matched in zip(right, right_matched):
                if not matched:
                    out.append(_create_row(self.names, [*([None] * self.widths[0]), *rv], RowKind.INSERT))
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_states"] = state["_condition"] = None
        return state
