"""The basic runtime operators, batch at a time: map, filter, flat_map, the keyed running reduce (and its BATCH-mode
form), and timestamp/watermark assignment. Chained runs of them are fused by `operators.fused`.

Every operator turns one RecordBatch into zero or one output batch per target, so the per-record work of a
stateless chain is one Python loop over a list. Operators on a KeyedStream set the current key per record
before calling the user function, so keyed state reads and writes that key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fluvial.common.time import MAX_WATERMARK
from fluvial.runtime.fused_loop import Step, fused_loop, returned_none
from fluvial.runtime.operators.base import (
    StreamOperator,
    defines_open,
    explain_unhashable_key,
    key_function,
    user_method,
)
from fluvial.runtime.records import RecordBatch, Watermark

if TYPE_CHECKING:
    from fluvial.state.backend import KeyedStateBackend


class MapOperator(StreamOperator):
    one_output_per_input = True

    def open(self) -> None:
        super().open()
        self._fn = user_method(self.spec.function, "map")
        self._key = key_function(self.spec.key_selector) if self.spec.key_selector is not None else None
        self._emit = self.output.collect

    def process_batch(self, batch: RecordBatch) -> None:
        if self._key is None:
            fn = self._fn
            # a comprehension, not map(): CPython 3.11 inlines Python-to-Python calls, not calls from C
            self._emit(RecordBatch([fn(value) for value in batch.values], batch.timestamps))
            return
        backend, key, fn = self.keyed_backend, self._key, self._fn
        out = []
        for value in batch.values:
            backend.current_key = key(value)
            out.append(fn(value))
        self._emit(RecordBatch(out, batch.timestamps))


class FilterOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._fn = user_method(self.spec.function, "filter")
        self._key = key_function(self.spec.key_selector) if self.spec.key_selector is not None else None
        self._emit = self.output.collect

    def process_batch(self, batch: RecordBatch) -> None:
        fn = self._fn
        if self._key is not None:
            backend, key, inner = self.keyed_backend, self._key, fn

            def fn(value: Any) -> object:  # truthy keeps the value, as the user's filter() says
                backend.current_key = key(value)
                return inner(value)

        if batch.timestamps is None:
            kept = [value for value in batch.values if fn(value)]
            if kept:
                self._emit(RecordBatch(kept))
            return
        pairs = [(v, ts) for v, ts in zip(batch.values, batch.timestamps) if fn(v)]
        if pairs:
            self._emit(RecordBatch([p[0] for p in pairs], [p[1] for p in pairs]))


class FlatMapOperator(StreamOperator):
    """flat_map. A function with a `map_batch(values) -> list` method (the table layer's vectorized Calc) is
    given each unkeyed buffer whole and returns one result per value, None for none."""

    def open(self) -> None:
        super().open()
        self._fn = user_method(self.spec.function, "flat_map")
        self._key = key_function(self.spec.key_selector) if self.spec.key_selector is not None else None
        self._emit = self.output.collect
        self._map_batch = batch_method(self.spec.function) if self._key is None else None
        self._run = (
            None
            if self._key is not None or self._map_batch is not None
            else fused_loop([Step.FLAT_MAP], [self._fn], [self.name])
        )

    def _results(self, value: Any) -> Any:
        if self._key is not None:
            self.keyed_backend.current_key = self._key(value)
        results = self._fn(value)
        if results is None:
            returned_none(self.name, value)
        return results

    def process_batch(self, batch: RecordBatch) -> None:
        if self._map_batch is not None:
            self._process_vectorized(self._map_batch, batch)
            return
        if batch.timestamps is None:
            out = (
                self._run(batch.values)
                if self._run is not None
                else [item for value in batch.values for item in self._results(value)]
            )
            if out:
                self._emit(RecordBatch(out))
            return
        results = self._results
        values: list[Any] = []
        stamps: list[Any] = []
        for value, ts in zip(batch.values, batch.timestamps):
            for item in results(value):
                values.append(item)
                stamps.append(ts)
        if values:
            self._emit(RecordBatch(values, stamps))

    def _process_vectorized(self, map_batch: Callable[[Any], list[Any]], batch: RecordBatch) -> None:
        results = map_batch(batch.values)
        if batch.timestamps is None:
            out = [r for r in results if r is not None]
            if out:
                self._emit(RecordBatch(out))
            return
        pairs = [(r, ts) for r, ts in zip(results, batch.timestamps) if r is not None]
        if pairs:
            self._emit(RecordBatch([p[0] for p in pairs], [p[1] for p in pairs]))


def batch_method(function: object) -> Callable[[Any], list[Any]] | None:
    """A flat_map function's `map_batch`, if it has one (also inside the wrapper a declared output type adds)."""
    found = getattr(function, "map_batch", None) or getattr(
        getattr(function, "wrapped_function", None), "map_batch", None
    )
    return found if callable(found) else None


class KeyedReduceOperator(StreamOperator):
    """The running-reduce primitive: for each record, new = reduce(previous of its key, record); emit new, in
    record order.

    State is the backend's raw value table. On the heap it is a dict, so the per-record cost is one key call,
    one dict get and set. Where each state access costs (RocksDB: a point read and an unpickle, a pickle and a
    write), a buffer is grouped by key first and each key's state is read and written once per buffer, its
    records folded in order in between.
    """

    keyed = True
    one_output_per_input = True
    keyed_backend: KeyedStateBackend
    STATE_NAME = "_keyed_reduce"

    def open(self) -> None:
        super().open()
        self._fn = user_method(self.spec.function, "reduce")
        self._key = key_function(self.spec.key_selector)
        self._table = self.keyed_backend.value_table(self.STATE_NAME)
        self._emit = self.output.collect
        # a ReduceFunction with an open() of its own may have created keyed state there, which its reduce() reads
        # for the current key: then the key is set before each call (a plain function skips that work)
        self._sets_key = defines_open(self.spec.function)
        if type(self._table) is not dict:
            self.aggregates = self._aggregates_grouped
        else:
            self.aggregates = self._aggregates_each_keyed if self._sets_key else self._aggregates_each

    def process_batch(self, batch: RecordBatch) -> None:
        self._emit(RecordBatch(self.aggregates(batch.values), batch.timestamps))

    def _aggregates_each(self, values: Any) -> list[Any]:
        """The aggregate after each record, folding record by record (state touched per record)."""
        key, fn, table, check = self._key, self._fn, self._table, self.new_key_check
        get = table.get
        out: list[Any] = []
        append = out.append
        missing = _MISSING
        k = None
        try:
            for value in values:
                k = key(value)
                previous = get(k, missing)
                if previous is not missing:
                    value = fn(previous, value)
                elif check is not None:
                    check(k)
                table[k] = value
                append(value)
        except TypeError as error:
            explain_unhashable_key(error, k)
        return out

    def _aggregates_each_keyed(self, values: Any) -> list[Any]:
        """`_aggregates_each` with the backend's current key set before each reduce() (keyed state in it)."""
        key, fn, table, backend, check = self._key, self._fn, self._table, self.keyed_backend, self.new_key_check
        out = []
        missing = _MISSING
        k = None
        try:
            for value in values:
                k = backend.current_key = key(value)
                previous = table.get(k, missing)
                if previous is not missing:
                    value = fn(previous, value)
                elif check is not None:
                    check(k)
                table[k] = value
                out.append(value)
        except TypeError as error:
            explain_unhashable_key(error, k)
        return out

    def _aggregates_grouped(self, values: Any) -> list[Any]:
        """The aggregate after each record, reading and writing each key's state once per buffer."""
        key, fn, table = self._key, self._fn, self._table
        positions: dict[Any, list[int]] = {}
        k = None
        try:
            for index, value in enumerate(values):
                k = key(value)
                where = positions.get(k)
                if where is None:
                    positions[k] = [index]
                else:
                    where.append(index)
        except TypeError as error:
            explain_unhashable_key(error, k)
        out = list(values)
        missing = _MISSING
        backend = self.keyed_backend
        for k, where in positions.items():
            backend.current_key = k  # once per key and buffer: keyed state in reduce() reads this key's
            aggregate = table.get(k, missing)
            if aggregate is missing and self.new_key_check is not None:
                self.new_key_check(k)
            for index in where:
                aggregate = values[index] if aggregate is missing else fn(aggregate, values[index])
                out[index] = aggregate
            table[k] = aggregate
        return out


_MISSING = object()


class BatchKeyedReduceOperator(KeyedReduceOperator):
    """The reduce of a BATCH job (Flink's BatchGroupedReduceOperator): not rolling. Each key's records are folded
    in arrival order and its final value is emitted once, when the input ends (the final watermark, or finish),
    stamped with the end of time. Per record: one key call, one dict get and set, no output."""

    one_output_per_input = False

    def process_batch(self, batch: RecordBatch) -> None:
        key, fn, table = self._key, self._fn, self._table
        get = table.get
        missing = _MISSING
        backend = self.keyed_backend if self._sets_key else None
        check = self.new_key_check
        k = None
        try:
            for value in batch.values:
                k = key(value)
                if backend is not None:
                    backend.current_key = k
                previous = get(k, missing)
                if previous is missing:
                    if check is not None:
                        check(k)
                    table[k] = value
                else:
                    table[k] = fn(previous, value)
        except TypeError as error:
            explain_unhashable_key(error, k)

    def process_watermark(self, watermark: Watermark) -> None:
        if watermark.is_final:
            self._emit_final()
        super().process_watermark(watermark)

    def finish(self) -> None:
        self._emit_final()

    def _emit_final(self) -> None:
        table = self._table
        if table:
            values = list(table.values())
            table.clear()
            self._emit(RecordBatch(values, [MAX_WATERMARK] * len(values)))


class TimestampsAndWatermarksOperator(StreamOperator):
    """`assign_timestamps_and_watermarks`: the same per-split machinery as a source, over one stream."""

    def open(self) -> None:
        from fluvial.runtime.source_watermarks import SourceWatermarks

        watermarks = SourceWatermarks(
            self.spec.function,
            self.output.emit_watermark,
            self.output.emit_watermark_status,
            self.context.metrics.group,
        )
        self._watermarks: SourceWatermarks | None = watermarks  # None once the final watermark went out
        self._assign = watermarks.process
        self._processing_time = self.context.processing_time_service
        self._interval = self.context.auto_watermark_interval
        if self._interval > 0 and self._processing_time is not None:
            self._processing_time.register_timer(
                self._processing_time.current_processing_time() + self._interval, self._on_periodic
            )

    def _on_periodic(self, now: int) -> None:
        if self._watermarks is not None:
            self._watermarks.on_periodic_emit()
            self._processing_time.register_timer(now + self._interval, self._on_periodic)

    def process_batch(self, batch: RecordBatch) -> None:
        self._assign(None, batch.values, self.output.collect, batch.timestamps)

    def process_watermark(self, watermark: Watermark) -> None:
        if watermark.is_final and self._watermarks is not None:
            self._watermarks.finish()
            self._watermarks = None
