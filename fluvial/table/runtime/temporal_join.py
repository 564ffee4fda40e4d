"""The event-time temporal join (Flink's TemporalRowTimeJoinOperator) on keyed state.

Both inputs are keyed by the join key. A left row waits in state until the watermark passes its time; it is then
joined with the version of the right (versioned) table valid at that time: the right row with the largest time
not after the left row's. A version that is a deletion joins nothing, so the key had no row then. The right
side's update-befores are not versions (Flink plans the versioned side to send only its update-afters); two
versions at the same time: the later one wins. The rows a watermark releases are emitted in the order they
arrived, each with its left row's kind (an insert-only left input gives an insert-only output); a LEFT join pads
a row without a version (or whose version fails the rest of the condition) with NULLs.

Cleanup, as Flink's: a version older than the one valid at the watermark can no longer be asked for by a
row that is not late, so it is removed when a timer fires. One event-time timer per key is kept, at the
smallest time that still needs work; a late left row (its time already behind the watermark) is joined at the
next watermark with the versions still kept. Both sides' state is keyed MapState, checkpointed like every
keyed operator's; `table.exec.state.ttl` expires a row or version after that long without a write (a key
that stays quiet that long then loses its versions, as Flink's state retention clears an idle key).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.state import MapStateDescriptor, ValueStateDescriptor
from fluvial.table.planner.rex import Rex
from fluvial.table.runtime.join import TwoSidedJoin
from fluvial.table.values import epoch_millis

__all__ = ["TemporalJoinFunction"]


class TemporalJoinFunction(TwoSidedJoin):
    """`times`: the left row's time column and the right row's rowtime column, each in its own row; `left_keys`:
    the left row's key columns (a NULL key joins nothing)."""

    def __init__(
        self,
        names: Sequence[str],
        widths: tuple[int, int],
        times: tuple[int, int],
        left_keys: Sequence[int],
        join_type: str,
        condition: Rex | None,
        state_ttl_millis: int = 0,
    ) -> None:
        super().__init__(names, widths, join_type, condition)
        self.state_ttl_millis = state_ttl_millis
        self.times = times
        self.left_keys = tuple(left_keys)
        self._left: Any = None
        self._right: Any = None
        self._timer: Any = None
        self._sequence: Any = None

    def open(self, runtime_context: Any) -> None:
        from fluvial.table.runtime.functions import _with_ttl

        ttl = self.state_ttl_millis
        # left: arrival number -> [row kind, values]; right: rowtime -> [accumulate, values]
        self._left = runtime_context.get_map_state(_with_ttl(MapStateDescriptor("temporal-join-left"), ttl))
        self._right = runtime_context.get_map_state(_with_ttl(MapStateDescriptor("temporal-join-right"), ttl))
        self._timer = runtime_context.get_state(ValueStateDescriptor("temporal-join-timer"))
        self._sequence = runtime_context.get_state(ValueStateDescriptor("temporal-join-next"))  # arrival numbers
        self._compile_condition()

    def process_element1(self, value: Row, ctx: Any) -> Iterable[Row]:
        values = tuple(value._values)
        stamp = values[self.times[0]]
        if stamp is None:  # a NULL time has no version
            return [self._padded_row(values, 0, value._row_kind)] if self.join_type == "LEFT" else []
        sequence = self._sequence.value() or 0
        self._sequence.update(sequence + 1)
        self._left.put(sequence, [value._row_kind.value, values])
        self._register(epoch_millis(stamp), ctx)
        return ()

    def process_element2(self, value: Row, ctx: Any) -> Iterable[Row]:
        kind = value._row_kind
        if kind is RowKind.UPDATE_BEFORE:
            return ()
        values = tuple(value._values)
        stamp = values[self.times[1]]
        if stamp is None:
            return ()
        time = epoch_millis(stamp)
        self._right.put(time, [kind is not RowKind.DELETE, values])
        self._register(time, ctx)
        return ()

    def _register(self, time: int, ctx: Any) -> None:
        """Keep the key's one timer at the smallest time that needs work."""
        registered = self._timer.value()
        if registered is not None and registered <= time:
            return
        timers = ctx.timer_service()
        if registered is not None:
            timers.delete_event_time_timer(registered)
        timers.register_event_time_timer(time)
        self._timer.update(time)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        self._timer.clear()
        watermark = max(timestamp, ctx.timer_service().current_watermark())
        left, right = self._left, self._right
        versions = sorted(right.items())
        times = [t for t, _ in versions]
        ready: list[tuple[int, list]] = []
        waiting: int | None = None
        for sequence, entry in left.items():
            time = epoch_millis(entry[1][self.times[0]])
            if time <= watermark:
                ready.append((sequence, entry))
            elif waiting is None or time < waiting:
                waiting = time
        out: list[Row] = []
        outer = self.join_type == "LEFT"
        for sequence, (kind_value, values) in sorted(ready, key=lambda r: r[0]):
            left.remove(sequence)
            kind = RowKind(kind_value)
            version = None
            if not any(values[i] is None for i in self.left_keys):
                at = bisect_right(times, epoch_millis(values[self.times[0]]))
                if at:
                    accumulate, found = versions[at - 1][1]
                    if accumulate:
                        version = found
            if version is not None:
                joined = [*values, *version]
                if self._fits(joined):
                    out.append(_create_row(self.names, joined, kind))
                    continue
            if outer:
                out.append(self._padded_row(values, 0, kind))
        if waiting is None:
            self._sequence.clear()
        self._clean_versions(versions, times, watermark)
        if waiting is not None:
            self._register(waiting, ctx)
        return out

    def _clean_versions(self, versions: list, times: list[int], watermark: int) -> None:
        """Remove the versions older than the one valid at `watermark` (and that one too when it is a deletion,
        which joins nothing, as no version would)."""
        valid = bisect_right(times, watermark) - 1
        if valid < 0:
            return
        keep_from = valid if versions[valid][1][0] else valid + 1
        for time in times[:keep_from]:
            self._right.remove(time)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_left"] = state["_right"] = state["_timer"] = state["_sequence"] = None
        return state
