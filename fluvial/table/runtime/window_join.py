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
from fluvial.datastream.functions import FlatMapFunction
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.table.planner.logical import WindowKind, WindowSpec
from fluvial.table.planner.rex import Rex
from fluvial.table.runtime.join import TwoSidedJoin
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


class WindowJoinFunction(TwoSidedJoin):
    def __init__(
        self,
        names: Sequence[str],
        widths: tuple[int, int],
        ends: tuple[int, int],
        join_type: str,
        condition: Rex | None,
    ) -> None:
        super().__init__(names, widths, join_type, condition)
        self.ends = ends  # each side's window_end column

    def open(self, runtime_context: Any) -> None:
        self._states = tuple(
            runtime_context.get_state(ValueStateDescriptor(f"window-join-{side}")) for side in ("left", "right")
        )
        self._compile_condition()

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
                if self._fits(joined):
                    out.append(_create_row(self.names, joined, RowKind.INSERT))
                    matched = right_matched[i] = True
            if not matched and self._outer(0):
                out.append(self._padded_row(lv, 0))
        if self._outer(1):
            for rv, matched in zip(right, right_matched):
                if not matched:
                    out.append(self._padded_row(rv, 1))
        return out
