"""The basic runtime operators, batch at a time: map, filter, flat_map, the keyed running reduce (and its BATCH-mode
form), fused runs of stateless map/filter, and timestamp/watermark assignment.

Every operator turns one RecordBatch into zero or one output batch per target, so the per-record work of a
stateless chain is one Python loop over a list. Operators on a KeyedStream set the current key per record
before calling the user function, so keyed state reads and writes that key.
"""

from __future__ import annotations

from typing import Any, Callable

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import MAX_WATERMARK
from fluvial.runtime.operators import (
    StreamOperator,
    explain_unhashable_key,
    key_function,
    label_failure,
    user_method,
)
from fluvial.runtime.records import RecordBatch, Watermark


class MapOperator(StreamOperator):
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

            def fn(value: Any) -> bool:
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
    def open(self) -> None:
        super().open()
        self._fn = user_method(self.spec.function, "flat_map")
        self._key = key_function(self.spec.key_selector) if self.spec.key_selector is not None else None
        self._emit = self.output.collect

    def _results(self, value: Any) -> Any:
        if self._key is not None:
            self.keyed_backend.current_key = self._key(value)
        results = self._fn(value)
        if results is None:
            raise InvalidJobError(
                f"the flat_map function of '{self.name}' returned None for {value!r}: return an iterable or yield"
            )
        return results

    def process_batch(self, batch: RecordBatch) -> None:
        results = self._results
        if batch.timestamps is None:
            out = [item for value in batch.values for item in results(value)]
            if out:
                self._emit(RecordBatch(out))
            return
        values: list = []
        stamps: list = []
        for value, ts in zip(batch.values, batch.timestamps):
            for item in results(value):
                values.append(item)
                stamps.append(ts)
        if values:
            self._emit(RecordBatch(values, stamps))


class KeyedReduceOperator(StreamOperator):
    """The running-reduce primitive: for each record, new = reduce(previous of its key, record); emit new.

    State is the backend's raw value table, so the per-record cost is one key call, one dict get and set.
    """

    keyed = True
    STATE_NAME = "_keyed_reduce"

    def open(self) -> None:
        super().open()
        self._fn = user_method(self.spec.function, "reduce")
        self._key = key_function(self.spec.key_selector)
        self._table = self.keyed_backend.value_table(self.STATE_NAME)
        self._emit = self.output.collect

    def process_batch(self, batch: RecordBatch) -> None:
        key, fn, table = self._key, self._fn, self._table
        get = table.get
        out = []
        append = out.append
        missing = _MISSING
        k = None
        try:
            for value in batch.values:
                k = key(value)
                previous = get(k, missing)
                if previous is not missing:
                    value = fn(previous, value)
                table[k] = value
                append(value)
        except TypeError as error:
            explain_unhashable_key(error, k)
        self._emit(RecordBatch(out, batch.timestamps))


_MISSING = object()


class BatchKeyedReduceOperator(KeyedReduceOperator):
    """The reduce of a BATCH job (Flink's BatchGroupedReduceOperator): not rolling. Each key's records are folded
    in arrival order and its final value is emitted once, when the input ends (the final watermark, or finish),
    stamped with the end of time. Per record: one key call, one dict get and set, no output."""

    def process_batch(self, batch: RecordBatch) -> None:
        key, fn, table = self._key, self._fn, self._table
        get = table.get
        missing = _MISSING
        k = None
        try:
            for value in batch.values:
                k = key(value)
                previous = get(k, missing)
                table[k] = value if previous is missing else fn(previous, value)
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


class FusedStatelessOperator(StreamOperator):
    """A run of chained, unkeyed map/filter operators fused into one pass: one generated Python loop per run
    (`for v in values: v = f0(v); if not f1(v): continue; ...; append(v)`) builds one list per buffer instead of
    one per operator, and its Python-to-Python calls are the ones CPython 3.11 inlines (a `map()` over the
    same functions is about a fifth slower). Chain building fuses only operators whose single output is the next
    one, so the observable behaviour is that of the separate operators."""

    def __init__(self, members: list[StreamOperator]) -> None:
        super().__init__(members[0].spec, members[0].context)
        self.members = members
        self.name = " -> ".join(member.name for member in members)

    def initialize_state(self, restore: Any) -> None:
        """Nothing to restore: only operators without state of their own are fused (`is_fusable`)."""

    def open(self) -> None:
        for member in self.members:
            member.output = self.output
            member.open()  # opens the user function; binds the member's own fn
        steps = [(map if isinstance(m, MapOperator) else filter, m._fn) for m in self.members]
        self._steps = steps
        self._run = _fused_loop([step is map for step, _ in steps], [fn for _, fn in steps])
        self._emit = self.output.collect

    def process_batch(self, batch: RecordBatch) -> None:
        try:
            if batch.timestamps is not None:
                out, stamps = self._run_timestamped(batch.values, batch.timestamps)
            else:
                out, stamps = self._run(batch.values), None
        except BaseException as error:
            label_failure(error, self._member_that_raised(error))
            raise
        if out:
            self._emit(RecordBatch(out, stamps))

    def _run_timestamped(self, values: list, stamps: list) -> tuple[list, list]:
        for step, fn in self._steps:
            if step is map:
                values = list(map(fn, values))
            else:
                kept = [(v, ts) for v, ts in zip(values, stamps) if fn(v)]
                values, stamps = [p[0] for p in kept], [p[1] for p in kept]
        return values, stamps

    def close(self) -> None:
        for member in self.members:
            member.close()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for member in self.members:
            member.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for member in self.members:
            member.notify_checkpoint_aborted(checkpoint_id)

    def _member_that_raised(self, error: BaseException) -> str:
        """The member whose user function is on the failing stack (the fused loop is one frame for all): the
        innermost frame running one of their functions' code."""
        codes = {}
        for member in self.members:
            function = member._fn
            code = getattr(getattr(function, "__func__", function), "__code__", None)
            if code is not None:
                codes[code] = member.name
        found = None
        traceback = error.__traceback__
        while traceback is not None:
            found = codes.get(traceback.tb_frame.f_code, found)
            traceback = traceback.tb_next
        return found or self.name


def _fused_loop(is_map: list[bool], functions: list[Callable[[Any], Any]]) -> Callable[[list], list]:
    """Generate `run(values) -> list` applying the steps in order (map: replace; filter: keep or skip)."""
    lines = ["def run(values):", "    out = []", "    append = out.append", "    for v in values:"]
    for index, mapping in enumerate(is_map):
        lines.append(f"        v = f{index}(v)" if mapping else f"        if not f{index}(v):\n            continue")
    lines += ["        append(v)", "    return out"]
    namespace: dict[str, Any] = {f"f{index}": fn for index, fn in enumerate(functions)}
    exec("\n".join(lines), namespace)  # noqa: S102 - the source is built here from a fixed template
    return namespace["run"]


def is_fusable(operator: StreamOperator) -> bool:
    """Unkeyed map and filter operators without operator state of their own (a CheckpointedFunction keeps its
    own state under its own operator id, so it stays a separate operator)."""
    from fluvial.runtime.operator_state import is_checkpointed_function

    return (type(operator) in (MapOperator, FilterOperator) and operator.spec.key_selector is None
            and not is_checkpointed_function(operator.spec.function))


class TimestampsAndWatermarksOperator(StreamOperator):
    """`assign_timestamps_and_watermarks`: the same per-split machinery as a source, over one stream."""

    def open(self) -> None:
        from fluvial.runtime.source_watermarks import SourceWatermarks

        self._watermarks = SourceWatermarks(self.spec.function, self.output.emit_watermark,
                                            self.output.emit_watermark_status)
        self._processing_time = self.context.processing_time_service
        self._interval = self.context.auto_watermark_interval
        if self._interval > 0 and self._processing_time is not None:
            self._processing_time.register_timer(
                self._processing_time.current_processing_time() + self._interval, self._on_periodic)

    def _on_periodic(self, now: int) -> None:
        if self._watermarks is not None:
            self._watermarks.on_periodic_emit()
            self._processing_time.register_timer(now + self._interval, self._on_periodic)

    def process_batch(self, batch: RecordBatch) -> None:
        self._watermarks.process(None, batch.values, self.output.collect, batch.timestamps)

    def process_watermark(self, watermark: Watermark) -> None:
        if watermark.is_final:
            self._watermarks.finish()
            self._watermarks = None
