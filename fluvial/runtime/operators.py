"""Runtime operators built from the API's operator descriptions (`OperatorSpec`s), batch at a time.

Every operator turns one RecordBatch into zero or one output batch per target, so the per-record work of a
stateless chain is a C-level `map`/`filter` over a list. Operators on a KeyedStream set the current key per
record before calling the user function, so keyed state reads and writes that key.
Lifecycle, on the task thread: `open()` → `process_batch*` / `process_watermark` → `end_input()` → `close()`.
"""

from __future__ import annotations

from typing import Any, Callable

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import MIN_WATERMARK
from fluvial.datastream import transformations as t
from fluvial.runtime.output import Output
from fluvial.runtime.records import RecordBatch, Watermark
from fluvial.runtime.runtime_context import OperatorContext, StreamingRuntimeContext


def user_method(function: Any, method: str) -> Callable[..., Any]:
    """A function object's method, or the plain callable itself."""
    bound = getattr(function, method, None)
    if bound is not None:
        return bound
    if callable(function):
        return function
    raise InvalidJobError(f"{function!r} is neither callable nor has .{method}()")


def key_function(selector: Any) -> Callable[[Any], Any]:
    return user_method(selector, "get_key")


def explain_unhashable_key(error: TypeError, key: Any) -> None:
    """Re-raise a TypeError from a state lookup as the clear key_by error when the key was unhashable."""
    from fluvial.common.key_groups import stable_hash

    stable_hash(key)  # raises InvalidJobError naming the key's type and the fix
    raise error


class StreamOperator:
    """Base: holds the spec, the context and the output; user functions opened and closed around the run."""

    keyed = False

    def __init__(self, spec: t.OperatorSpec, context: OperatorContext) -> None:
        self.spec = spec
        self.context = context
        self.name = context.operator_name
        self.output: Output | None = None
        self.keyed_backend: Any = None
        if spec.key_selector is not None or self.keyed:
            self.keyed_backend = context.create_keyed_backend()
        self.runtime_context = StreamingRuntimeContext(context, self.keyed_backend)
        self.current_watermark = MIN_WATERMARK

    def setup(self, output: Output) -> None:
        self.output = output

    def open(self) -> None:
        function = self.spec.function
        initialize = getattr(function, "initialize_state", None)
        if callable(initialize) and callable(getattr(function, "snapshot_state", None)):
            # a CheckpointedFunction: its operator state first (restored or empty), then open()
            from fluvial.runtime.operator_state import FunctionInitializationContext, OperatorStateStore

            restore = getattr(self, "_restored", None)
            self._function_state = OperatorStateStore(restore.operator_state if restore is not None else None)
            initialize(FunctionInitializationContext(self._function_state, self.runtime_context))
        opener = getattr(function, "open", None)
        if opener is not None and callable(opener) and not isinstance(function, type):
            opener(self.runtime_context)

    def process_batch(self, batch: RecordBatch) -> None:
        raise NotImplementedError

    def process_watermark(self, watermark: Watermark) -> None:
        self.current_watermark = watermark.timestamp
        self.output.emit_watermark(watermark)

    def end_input(self) -> None:
        """All input has arrived; emit what is still held."""

    def close(self) -> None:
        try:
            closer = getattr(self.spec.function, "close", None)
            if closer is not None and callable(closer) and not isinstance(self.spec.function, type):
                closer()
        finally:
            if self.keyed_backend is not None:
                self.keyed_backend.dispose()

    # -- checkpoints (on the task thread) ------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int, savepoint: bool = False) -> Any:
        """The synchronous part: freeze keyed state, timers and operator state; None when there is none.

        Keyed state is frozen as cheaply as the backend allows: the heap copies and leaves partitioning by key
        group to the asynchronous part; incremental RocksDB hard-links a native checkpoint. Savepoints always
        take the canonical, self-contained form (by key group)."""
        from fluvial.checkpoint.snapshots import OperatorSnapshot

        snapshot = OperatorSnapshot(self.context.operator_id)
        if self.keyed_backend is not None:
            backend = self.keyed_backend
            if getattr(backend, "incremental", False) and not savepoint:
                snapshot.keyed = backend.checkpoint_native(checkpoint_id, f"{backend.db_path}.chk-{checkpoint_id}")
            elif hasattr(backend, "freeze"):
                snapshot.keyed = backend.freeze()
            else:
                snapshot.keyed = backend.snapshot()
        timers = getattr(self, "timers", None)
        if timers is not None:
            snapshot.timers = timers.snapshot_by_key_group(self.context.max_parallelism)
        snapshot.operator_state = self.snapshot_operator_state(checkpoint_id)
        if snapshot.keyed is None and not snapshot.timers and not snapshot.operator_state:
            return None
        return snapshot

    def snapshot_operator_state(self, checkpoint_id: int) -> dict[str, list]:
        """A CheckpointedFunction's lists; other operators override this with their own state."""
        store = getattr(self, "_function_state", None)
        if store is None:
            return {}
        from fluvial.runtime.operator_state import FunctionSnapshotContext

        self.spec.function.snapshot_state(FunctionSnapshotContext(checkpoint_id))
        return store.snapshot()

    def initialize_state(self, restore: Any) -> None:
        """Before open(): keyed state now, timers once open() has built the timer service."""
        if self.keyed_backend is not None and (restore.keyed or restore.native_keyed):
            from fluvial.runtime.native_state import restore_keyed_backend

            restore_keyed_backend(self.keyed_backend, restore)
        self._restored = restore

    def after_open(self) -> None:
        restore = getattr(self, "_restored", None)
        timers = getattr(self, "timers", None)
        if restore is not None and timers is not None and restore.timers:
            timers.restore_key_groups(restore.timers, self.context.key_group_range())

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        backend_notify = getattr(self.keyed_backend, "notify_checkpoint_complete", None)
        if backend_notify is not None:
            backend_notify(checkpoint_id)  # an incremental backend's next diff is against this checkpoint
        notify = getattr(self.spec.function, "notify_checkpoint_complete", None)
        if callable(notify):
            notify(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        backend_notify = getattr(self.keyed_backend, "notify_checkpoint_aborted", None)
        if backend_notify is not None:
            backend_notify(checkpoint_id)
        notify = getattr(self.spec.function, "notify_checkpoint_aborted", None)
        if callable(notify):
            notify(checkpoint_id)


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

    def open(self) -> None:
        for member in self.members:
            member.output = self.output
            member.open()  # opens the user function; binds the member's own fn
        steps = [(map if isinstance(m, MapOperator) else filter, m._fn) for m in self.members]
        self._steps = steps
        self._run = _fused_loop([step is map for step, _ in steps], [fn for _, fn in steps])
        self._emit = self.output.collect

    def process_batch(self, batch: RecordBatch) -> None:
        if batch.timestamps is not None:
            self._process_timestamped(batch)
            return
        out = self._run(batch.values)
        if out:
            self._emit(RecordBatch(out))

    def _process_timestamped(self, batch: RecordBatch) -> None:
        values, stamps = batch.values, batch.timestamps
        for step, fn in self._steps:
            if step is map:
                values = list(map(fn, values))
            else:
                kept = [(v, ts) for v, ts in zip(values, stamps) if fn(v)]
                values, stamps = [p[0] for p in kept], [p[1] for p in kept]
        if values:
            self._emit(RecordBatch(values, stamps))

    def close(self) -> None:
        for member in self.members:
            member.close()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for member in self.members:
            member.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for member in self.members:
            member.notify_checkpoint_aborted(checkpoint_id)

    def operator_for_code(self, code: object) -> str | None:
        """Which member's user function owns a code object (to name the operator whose function raised)."""
        for member in self.members:
            function = member._fn
            if getattr(getattr(function, "__func__", function), "__code__", None) is code:
                return member.name
        return None


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
    return type(operator) in (MapOperator, FilterOperator) and operator.spec.key_selector is None


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
