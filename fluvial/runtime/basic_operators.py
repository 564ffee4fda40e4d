"""The basic runtime operators, batch at a time: map, filter, flat_map, the keyed running reduce (and its BATCH-mode
form), fused runs of stateless map/filter, and timestamp/watermark assignment.

Every operator turns one RecordBatch into zero or one output batch per target, so the per-record work of a
stateless chain is one Python loop over a list. Operators on a KeyedStream set the current key per record
before calling the user function, so keyed state reads and writes that key.
"""

from __future__ import annotations

import enum
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
        self._run = None if self._key is not None else _fused_loop([Step.FLAT_MAP], [self._fn], [self.name])

    def _results(self, value: Any) -> Any:
        if self._key is not None:
            self.keyed_backend.current_key = self._key(value)
        results = self._fn(value)
        if results is None:
            _returned_none(self.name, value)
        return results

    def process_batch(self, batch: RecordBatch) -> None:
        if batch.timestamps is None:
            out = self._run(batch.values) if self._run is not None else \
                [item for value in batch.values for item in self._results(value)]
            if out:
                self._emit(RecordBatch(out))
            return
        results = self._results
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


class Step(enum.Enum):
    """What one member of a fused run does to each value."""

    MAP = "map"  # replace it
    FILTER = "filter"  # keep it or drop it
    FLAT_MAP = "flat_map"  # replace it by zero or more values, each going through the steps after


class FusedStatelessOperator(StreamOperator):
    """A run of chained, unkeyed map/filter/flat_map operators fused into one pass: one generated Python loop per
    run (`for v in values: v = f0(v); if not f1(v): continue; for v in f2(v): ...; append(v)`) builds one list
    per buffer instead of one per operator, and its Python-to-Python calls are the ones CPython 3.11 inlines (a
    `map()` over the same functions is about a fifth slower). A flat_map whose every call returns nothing (a
    counting tail before `print()`) costs its call and an empty loop. Chain building fuses only operators whose
    single output is the next one, so the observable behaviour is that of the separate operators."""

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
        self._steps = [(_STEP_OF[type(member)], member._fn, member.name) for member in self.members]
        self._run = _fused_loop(*(list(column) for column in zip(*self._steps)))
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
        """Step by step over (values, timestamps): a flat_map's values keep their input's timestamp."""
        for step, fn, name in self._steps:
            if step is Step.MAP:
                values = [fn(v) for v in values]
            elif step is Step.FILTER:
                kept = [(v, ts) for v, ts in zip(values, stamps) if fn(v)]
                values, stamps = [p[0] for p in kept], [p[1] for p in kept]
            else:
                out_values: list = []
                out_stamps: list = []
                for v, ts in zip(values, stamps):
                    results = fn(v)
                    if results is None:
                        _returned_none(name, v)
                    for item in results:
                        out_values.append(item)
                        out_stamps.append(ts)
                values, stamps = out_values, out_stamps
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


def _returned_none(operator: str, value: Any) -> None:
    error = InvalidJobError(f"the flat_map function of '{operator}' returned None for {value!r}: return an "
                            "iterable or yield")
    label_failure(error, operator)
    raise error


def _fused_loop(steps: list[Step], functions: list[Callable[[Any], Any]], names: list[str]) -> Callable[[list], list]:
    """Generate `run(values) -> list` applying the steps in order: a map replaces `v`, a filter `continue`s the
    innermost loop, a flat_map opens a loop over its results for the steps after it (the last step's results
    are added with one `extend`)."""
    parameters = "".join(f", f{index}=f{index}" for index in range(len(steps)))  # locals: the fastest lookups
    lines = [f"def run(values{parameters}):", "    out = []", "    append = out.append", "    extend = out.extend",
             "    for v in values:"]
    indent = "        "
    for index, step in enumerate(steps):
        if step is Step.MAP:
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
    namespace: dict[str, Any] = {f"f{index}": fn for index, fn in enumerate(functions)}
    exec("\n".join(lines), namespace)  # noqa: S102 - the source is built here from a fixed template
    run = namespace["run"]
    flat_maps = {index: names[index] for index, step in enumerate(steps) if step is Step.FLAT_MAP}
    if not flat_maps:
        return run

    def checked_run(values: list) -> list:
        try:
            return run(values)
        except TypeError as error:
            _explain_none_result(error, run.__code__, lines, flat_maps)
            raise

    return checked_run


def _explain_none_result(error: TypeError, code: Any, lines: list[str], flat_maps: dict[int, str]) -> None:
    """A flat_map whose result cannot be iterated fails in the generated loop itself, not in user code: label
    the error with that flat_map's name and, for None, raise the error naming the operator and the value. (The
    loop has no per-record None check: the tail of a chain is the hottest code there is.)"""
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_next is not None:
        traceback = traceback.tb_next
    if traceback is None or traceback.tb_frame.f_code is not code:
        return
    source = lines[traceback.tb_lineno - 1]
    for index, name in flat_maps.items():
        if f"f{index}(v)" in source:
            if "NoneType" in str(error):
                _returned_none(name, traceback.tb_frame.f_locals.get("v"))
            label_failure(error, name)


_STEP_OF = {MapOperator: Step.MAP, FilterOperator: Step.FILTER, FlatMapOperator: Step.FLAT_MAP}


def is_fusable(operator: StreamOperator) -> bool:
    """Unkeyed map, filter and flat_map operators without operator state of their own (a CheckpointedFunction
    keeps its own state under its own operator id, so it stays a separate operator)."""
    from fluvial.runtime.operator_state import is_checkpointed_function

    return (type(operator) in _STEP_OF and operator.spec.key_selector is None
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
