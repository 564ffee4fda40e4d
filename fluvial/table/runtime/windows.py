"""Event-time pieces of table plans: the watermark a `WATERMARK FOR` clause defines, the CUMULATE window
assigner, and the aggregate/window functions a window aggregation runs on fluvial's window operator (keyed
window state, event-time timers: checkpointed and rescalable like any DataStream window)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.common.watermark_strategy import TimestampAssigner, Watermark, WatermarkGenerator
from fluvial.datastream.functions import AggregateFunction, KeyedProcessFunction
from fluvial.datastream.window import EventTimeTrigger, ProcessingTimeTrigger, TimeWindow, WindowAssigner
from fluvial.datastream.window_functions import ProcessWindowFunction
from fluvial.table.planner.rex import AggCall, Rex
from fluvial.table.runtime.aggregators import AggregateSet
from fluvial.table.runtime.functions import ExpressionEvaluator
from fluvial.table.runtime.over import register_timer, row_time
from fluvial.table.values import epoch_millis, from_epoch_millis

__all__ = [
    "CumulativeProcessingTimeWindows",
    "RowtimeAssigner",
    "SqlWatermarkGenerator",
    "CumulativeEventTimeWindows",
    "WindowAggAccumulate",
    "WindowAggResult",
    "OverAggFunction",
    "WindowRowsResult",
]


class RowtimeAssigner(TimestampAssigner):
    """A row's event time: its rowtime column as epoch milliseconds."""

    def __init__(self, index: int) -> None:
        self.index = index

    def extract_timestamp(self, value: Row, record_timestamp: int | None) -> int:
        stamp = value._values[self.index]
        if stamp is None:
            raise ValueError(
                f"RowTime field should not be null, please convert it to a non-null long value; the row was {value}"
            )
        return epoch_millis(stamp)


class SqlWatermarkGenerator(WatermarkGenerator):
    """`WATERMARK FOR ts AS expr`: the watermark is the largest `expr` seen so far (Flink's
    WatermarkAssignerOperator), emitted every auto-watermark interval and, as Flink does, at once when a row
    moves it more than that interval (in event time) past the last one emitted — so which rows are late does not
    hang on how fast the source reads. A NULL `expr` is skipped."""

    def __init__(self, expression: Rex, interval: int = 200) -> None:
        self.evaluate = ExpressionEvaluator(expression)
        self.interval = interval
        self.current: int | None = None
        self.emitted: int | None = None

    def on_event(self, event: Any, event_timestamp: int | None, output: Any) -> None:
        value = self.evaluate(event._values)
        if value is None:
            return
        millis = epoch_millis(value)
        if self.current is None or millis > self.current:
            self.current = millis
            if self.emitted is None or millis - self.emitted > self.interval:
                self.on_periodic_emit(output)

    def on_periodic_emit(self, output: Any) -> None:
        if self.current is not None and self.current != self.emitted:
            self.emitted = self.current
            output.emit_watermark(Watermark(self.current))


class SqlWatermarkSupplier:
    """Builds one generator per subtask (the strategy's factory is config; the generator is logic)."""

    def __init__(self, expression: Rex, interval: int = 200) -> None:
        self.expression = expression
        self.interval = interval

    def __call__(self) -> SqlWatermarkGenerator:
        return SqlWatermarkGenerator(self.expression, self.interval)


class CumulativeEventTimeWindows(WindowAssigner):
    """CUMULATE(step, max_size): windows that share a start and grow by `step` until `max_size`, so a row
    belongs to every window of its period whose end is after it."""

    def __init__(self, max_size: int, step: int, offset: int = 0) -> None:
        if max_size % step != 0:
            raise ValueError(f"CUMULATE's max size ({max_size} ms) must be a multiple of its step ({step} ms)")
        self.max_size = max_size
        self.step = step
        self.offset = offset

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[TimeWindow]:
        assert timestamp is not None
        start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.max_size)
        first_end = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.step) + self.step
        return [TimeWindow(start, end) for end in range(first_end, start + self.max_size + 1, self.step)]

    def get_default_trigger(self, env: Any = None) -> Any:
        return EventTimeTrigger.create()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"CumulativeEventTimeWindows(max_size={self.max_size}, step={self.step})"


class CumulativeProcessingTimeWindows(CumulativeEventTimeWindows):
    """CUMULATE over a processing-time attribute: a row belongs to the windows that hold the operator's clock when
    it arrives, and each window fires when that clock passes its end."""

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list[TimeWindow]:
        return super().assign_windows(element, context.get_current_processing_time(), context)

    def get_default_trigger(self, env: Any = None) -> Any:
        return ProcessingTimeTrigger.create()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CumulativeProcessingTimeWindows(max_size={self.max_size}, step={self.step})"


class WindowAggAccumulate(AggregateFunction):
    """The aggregates of one window pane, accumulated as rows arrive (a window's state is its accumulator)."""

    def __init__(self, calls: Sequence[AggCall]) -> None:
        self.calls = tuple(calls)
        self._aggs: AggregateSet | None = None

    def _set(self) -> AggregateSet:
        if self._aggs is None:
            self._aggs = AggregateSet(self.calls)
        return self._aggs

    def create_accumulator(self) -> Any:
        return self._set().create()

    def add(self, value: Row, accumulator: Any) -> Any:
        if value._row_kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            self._set().accumulate(accumulator, value._values)
        else:
            self._set().retract(accumulator, value._values)
        return accumulator

    def get_result(self, accumulator: Any) -> Any:
        return self._set().values(accumulator)

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        self._set().merge(acc_a, acc_b)
        return acc_a

    def __getstate__(self) -> dict:
        return {"calls": self.calls, "_aggs": None}


class WindowAggResult(ProcessWindowFunction):
    """`+I[keys, aggregates, window_start, window_end, window_time]` when the window fires."""

    def __init__(self, names: Sequence[str], key_count: int) -> None:
        self.names = list(names)
        self.key_count = key_count

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Row]:
        window = context.window()
        if self.key_count == 0:
            keys: list[Any] = []
        elif self.key_count == 1:
            keys = [key]
        else:
            keys = list(key)
        start, end = window.start, window.end
        for values in elements:
            yield _create_row(
                self.names,
                keys + list(values) + [from_epoch_millis(start), from_epoch_millis(end), from_epoch_millis(end - 1)],
                RowKind.INSERT,
            )


class WindowRowsResult(ProcessWindowFunction):
    """A window table function's rows: each row of a fired window with window_start, window_end and
    window_time after its columns, in the order the rows arrived."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)

    def process(self, key: Any, context: Any, elements: Iterable[Row]) -> Iterable[Row]:
        window = context.window()
        bounds = [from_epoch_millis(window.start), from_epoch_millis(window.end), from_epoch_millis(window.end - 1)]
        for row in elements:
            yield _create_row(self.names, list(row._values) + bounds, RowKind.INSERT)


class OverAggFunction(KeyedProcessFunction):
    """Running aggregates per key in event-time order (see OverAggregate). Rows are buffered by timestamp until
    the watermark passes them; then, in time order, each row (ROWS) or each group of rows with one timestamp
    (RANGE) is accumulated and emitted with the aggregates so far. A row at or behind the watermark is late:
    dropped, as Flink drops it.

    `proctime`: ordered by a processing-time attribute (Flink's ProcTime*UnboundedPrecedingFunction): a row is
    placed at the operator's clock + 1 ms, so the rows that arrive within one millisecond form one RANGE peer
    group, emitted by the processing-time timer at that time; nothing is late."""

    def __init__(
        self, names: Sequence[str], rowtime: int, rows_frame: bool, calls: Sequence[AggCall], proctime: bool = False
    ) -> None:
        self.names = list(names)
        self.rowtime = rowtime
        self.proctime = proctime
        self.rows_frame = rows_frame
        self.calls = tuple(calls)
        self._aggs: AggregateSet | None = None
        self._acc: Any = None
        self._buffer: Any = None

    def open(self, runtime_context: Any) -> None:
        from fluvial.datastream.state import MapStateDescriptor, ValueStateDescriptor

        self._aggs = AggregateSet(self.calls)
        self._acc = runtime_context.get_state(ValueStateDescriptor("over-acc"))
        self._buffer = runtime_context.get_map_state(MapStateDescriptor("over-rows"))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        timers = ctx.timer_service()
        millis = row_time(value, self.rowtime, self.proctime, timers)
        if millis is None or (not self.proctime and millis <= timers.current_watermark()):
            return ()
        pending = self._buffer.get(millis)
        if pending is None:
            pending = []
            register_timer(timers, self.proctime, millis)
        pending.append(list(value._values))
        self._buffer.put(millis, pending)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        assert self._aggs is not None
        rows = self._buffer.get(timestamp) or []
        self._buffer.remove(timestamp)
        acc = self._acc.value() or self._aggs.create()
        out = []
        if self.rows_frame:
            for values in rows:
                self._aggs.accumulate(acc, values)
                out.append(_create_row(self.names, values + self._aggs.values(acc), RowKind.INSERT))
        else:
            for values in rows:
                self._aggs.accumulate(acc, values)
            results = self._aggs.values(acc)
            out = [_create_row(self.names, values + results, RowKind.INSERT) for values in rows]
        self._acc.update(acc)
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_aggs"] = state["_acc"] = state["_buffer"] = None
        return state
