"""Operators that call a user function per record with a context: ProcessFunction, KeyedProcessFunction, and
the two-input CoMap / CoFlatMap / CoProcess / KeyedCoProcess. Results may be returned or yielded; a yielded
`(output_tag, value)` goes to that side output. Outputs carry the input record's timestamp, as in Flink."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fluvial.common.errors import StateError
from fluvial.common.time import MAX_WATERMARK
from fluvial.datastream import functions as f
from fluvial.datastream.timerservice import TimeDomain, TimerService
from fluvial.runtime.operators.base import (
    StreamOperator,
    TwoInputStreamOperator,
    explain_unhashable_key,
    key_function,
    user_method,
)
from fluvial.runtime.output import split_side_outputs
from fluvial.runtime.records import RecordBatch, Watermark
from fluvial.runtime.timers import KeyedTimerService, NonKeyedTimerService, Timer


class ProcessContext(f.KeyedProcessFunction.OnTimerContext, f.KeyedCoProcessFunction.OnTimerContext):
    """One context object per operator, repointed for each record or timer (no allocation per record)."""

    __slots__ = ("_timestamp", "_backend", "_timers", "_time_domain")

    def __init__(self, backend: Any, timers: TimerService) -> None:
        self._timestamp: int | None = None
        self._backend = backend
        self._timers = timers
        self._time_domain: TimeDomain | None = None

    def time_domain(self) -> TimeDomain | None:
        """In `on_timer`: which clock fired the timer."""
        return self._time_domain

    def timestamp(self) -> int | None:
        return self._timestamp

    def timer_service(self) -> TimerService:
        return self._timers

    def get_current_key(self) -> Any:
        if self._backend is None:
            raise StateError("get_current_key() outside a keyed stream: apply the function after key_by(...)")
        return self._backend.current_key


class _PerRecordOperator(StreamOperator):
    """Shared driver: run `call(value)` for each record of a batch, gather results, emit main and side. Keyed
    ones have timers (KeyedTimerService); unkeyed ones only the clocks, as in Flink."""

    uses_timers = True

    def open(self) -> None:
        super().open()
        if self.timers is not None:
            timer_service: TimerService = KeyedTimerService(self.timers)
        else:
            timer_service = NonKeyedTimerService(
                self.context.processing_time_service, lambda: self.current_watermark, self.name
            )
        self.ctx = ProcessContext(self.keyed_backend, timer_service)
        self._emit = self.output.collect
        # looked up once: behind a declared output type every lookup goes through TypedFunction.__getattr__
        self._on_timer = getattr(self.spec.function, "on_timer", None)

    def process_watermark(self, watermark: Watermark) -> None:
        """Event-time timers up to the watermark fire first; their output precedes the watermark."""
        self.current_watermark = watermark.timestamp
        if self.timers is not None:
            self.timers.advance_watermark(watermark.timestamp)
        # a function that emits rows older than the watermark (a SQL interval join) holds it back by that much
        delay: int = getattr(self.spec.function, "output_watermark_delay", 0)
        if delay and watermark.timestamp != MAX_WATERMARK:
            watermark = Watermark(watermark.timestamp - delay)
        self.output.emit_watermark(watermark)

    def on_event_time(self, timer: Timer) -> None:
        self._fire(timer, TimeDomain.EVENT_TIME, timer.timestamp)

    def on_processing_time(self, timer: Timer) -> None:
        self._fire(timer, TimeDomain.PROCESSING_TIME, None)

    def _fire(self, timer: Timer, domain: TimeDomain, record_timestamp: int | None) -> None:
        on_timer = self._on_timer
        if on_timer is None:
            return
        ctx = self.ctx
        ctx._timestamp, ctx._time_domain = timer.timestamp, domain
        try:
            result = on_timer(timer.timestamp, ctx)
            # a generator's body runs only now: consume it while the context still names the time domain
            values = None if result is None else list(result)
        finally:
            ctx._time_domain = None
        if values is not None:
            self._emit_results(values, None if record_timestamp is None else [record_timestamp] * len(values))

    def run(self, batch: RecordBatch, call: Callable[[Any], Any], key: Callable[[Any], Any] | None) -> None:
        ctx = self.ctx
        backend = self.keyed_backend
        values: list[Any] = []
        stamps: list[Any] | None = [] if batch.timestamps is not None else None
        timestamps = batch.timestamps or [None] * len(batch.values)
        for value, ts in zip(batch.values, timestamps):
            ctx._timestamp = ts
            if key is not None:
                backend.current_key = key(value)
            try:
                result = call(value)
            except TypeError as error:
                if key is None:
                    raise
                explain_unhashable_key(error, backend.current_key)
            if result is None:
                continue
            produced = list(result) if not isinstance(result, (str, bytes)) else [result]
            values.extend(produced)
            if stamps is not None:
                stamps.extend([ts] * len(produced))
        self._emit_results(values, stamps)

    def _emit_results(self, values: list[Any], stamps: list[Any] | None) -> None:
        main, side = split_side_outputs(values, stamps)
        for tag, batch in side.items():
            self.output.collect_side(tag, batch)
        if main.values:
            self._emit(main)


class ProcessOperator(_PerRecordOperator):
    def open(self) -> None:
        super().open()
        method = user_method(self.spec.function, "process_element")
        ctx = self.ctx
        self._call = lambda value: method(value, ctx)

    def process_batch(self, batch: RecordBatch) -> None:
        self.run(batch, self._call, None)


class KeyedProcessOperator(ProcessOperator):
    keyed = True

    def process_batch(self, batch: RecordBatch) -> None:
        self.run(batch, self._call, self._key)

    def open(self) -> None:
        super().open()
        self._key = key_function(self.spec.key_selector)


class _TwoInputOperator(TwoInputStreamOperator, _PerRecordOperator):
    """Base of two-input operators: `method1`/`method2` name the user function's per-input methods."""

    method1 = ""
    method2 = ""
    with_context = False

    def open(self) -> None:
        super().open()
        m1 = user_method(self.spec.function, self.method1)
        m2 = user_method(self.spec.function, self.method2)
        if self.with_context:
            ctx = self.ctx
            self._call1 = lambda value: m1(value, ctx)
            self._call2 = lambda value: m2(value, ctx)
        else:
            self._call1, self._call2 = m1, m2
        self._key1 = key_function(self.spec.key_selector) if self.spec.key_selector is not None else None
        self._key2 = key_function(self.spec.key_selector2) if self.spec.key_selector2 is not None else None

    def process_batch1(self, batch: RecordBatch) -> None:
        self.run(batch, self._call1, self._key1)

    def process_batch2(self, batch: RecordBatch) -> None:
        self.run(batch, self._call2, self._key2)


class CoMapOperator(_TwoInputOperator):
    method1, method2 = "map1", "map2"

    def run(self, batch: RecordBatch, call: Callable[[Any], Any], key: Callable[[Any], Any] | None) -> None:
        if key is not None:
            backend = self.keyed_backend
            out = []
            for value in batch.values:
                backend.current_key = key(value)
                out.append(call(value))
        else:
            out = list(map(call, batch.values))
        self._emit(RecordBatch(out, batch.timestamps))


class CoFlatMapOperator(_TwoInputOperator):
    method1, method2 = "flat_map1", "flat_map2"


class CoProcessOperator(_TwoInputOperator):
    method1, method2 = "process_element1", "process_element2"
    with_context = True


class KeyedCoProcessOperator(CoProcessOperator):
    keyed = True
