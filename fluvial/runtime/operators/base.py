"""The operator contract: what every runtime operator is, and the helpers they share.

Lifecycle, on the task thread, in this order (Flink's StreamOperator):
1. `setup(output)`: where results go (chained operators and record writers), wired once by the chain.
2. `initialize_state(restore)`: keyed state, timers and operator state, restored or empty (`restore` is None
   for a fresh start). Timers exist when the class declares `uses_timers` and the operator is keyed.
3. `open()`: user functions are opened.
4. Input: `process_batch` / `process_watermark` / `process_status` of each of its inputs (`input(n)`: the
   operator itself for its one input; an OperatorInput per input of a two-input operator).
5. `finish()`: all input has arrived; emit what is still held. An operator that `holds_input` (async I/O:
   results arrive after the input that caused them) may still hold some afterwards: the chain waits, running
   the task's mails, until `is_quiescent()`; while running, `input_blocked()` tells the task to feed it
   nothing for now (its capacity is used up).
6. `close()`: user functions closed, state disposed — also after a failure.
Checkpoints between buffers: `snapshot_state` (the synchronous part), then `notify_checkpoint_complete` or
`notify_checkpoint_aborted`.
Failures are labelled with the operator's name where one operator hands a buffer to the next
(`labelled_input`), so the job's error names the operator whose code raised.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from fluvial.common.errors import InvalidJobError, UnreadableStateError
from fluvial.common.time import MIN_WATERMARK
from fluvial.datastream import transformations as t
from fluvial.runtime.key_extraction import fast_key
from fluvial.runtime.operators.runtime_context import OperatorContext, StreamingRuntimeContext
from fluvial.runtime.output import Output
from fluvial.runtime.records import RecordBatch, Watermark, WatermarkStatus

if TYPE_CHECKING:
    from fluvial.checkpoint.snapshots import OperatorRestore, OperatorSnapshot
    from fluvial.runtime.operators.operator_state import OperatorStateStore
    from fluvial.runtime.timers import InternalTimerService, Timer

_OPERATOR_LABEL = "_fluvial_operator"


def user_method(function: object, method: str) -> Callable[..., Any]:
    """A function object's method, or the plain callable itself."""
    bound: Callable[..., Any] | None = getattr(function, method, None)
    if bound is not None:
        return bound
    if callable(function):
        return function
    raise InvalidJobError(f"{function!r} is neither callable nor has .{method}()")


def defines_open(function: Any) -> bool:
    """Whether the user's function object (inside the wrapper a declared output type adds) has an open() of its
    own — where a rich function creates its keyed state — rather than the base class's no-op."""
    inner = getattr(function, "wrapped_function", function)
    method = getattr(type(inner), "open", None)
    return callable(method) and method.__qualname__ != "Function.open"


def key_function(selector: Any) -> Callable[[Any], Any]:
    """The key selector's function; `value[constant]` selectors as itemgetters (`key_extraction.fast_key`)."""
    return fast_key(user_method(selector, "get_key"))


def key_by_name(selector: Any) -> str:
    """How a failure of a key selector is attributed: `key_by(<selector>)`, as the job was written."""
    return f"key_by({described(selector)})"


def described(function: Any) -> str:
    own = getattr(function, "__qualname__", None)
    return own if own is not None else type(function).__name__


# keyed operators call their key selector through a local `key`, `key1`, `key2` or an attribute `self._key`...
_KEY_CALL = re.compile(r"(self\._)?(key[12]?)\(")
_OPERATORS_PACKAGE = __name__.rpartition(".")[0] + "."


def called_key(error: BaseException) -> Any:
    """The key function a runtime operator was calling when `error` escaped it (its selector raised, or the key
    it returned cannot be hashed), else None. Read from the traceback once a failure happened, so the per-record
    path pays nothing: the innermost frame of operator code and the call expression it was running."""
    calling = None
    traceback = error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_code is _EXPLAIN_UNHASHABLE:
            return _UNHASHABLE
        if frame.f_globals.get("__name__", "").startswith(_OPERATORS_PACKAGE):
            calling = traceback
        traceback = traceback.tb_next
    if calling is None:
        return None
    frame = calling.tb_frame
    positions = list(frame.f_code.co_positions())
    index = calling.tb_lasti // 2
    if index >= len(positions):
        return None
    line, end_line, start, end = positions[index]
    if line is None or line != end_line or start is None:
        return None
    match = _KEY_CALL.match(linecache.getline(frame.f_code.co_filename, line)[start:end])
    if match is None:
        return None
    if match.group(1):
        owner = frame.f_locals.get("self")
        return getattr(owner, "_" + match.group(2), None)
    return frame.f_locals.get(match.group(2))


_UNHASHABLE = object()  # called_key's answer for a key that cannot be hashed: the key_by's failure too


def explain_unhashable_key(error: TypeError, key: Any) -> None:
    """Re-raise a TypeError from a state lookup as the clear key_by error when the key was unhashable."""
    from fluvial.common.key_groups import stable_hash

    stable_hash(key)  # raises InvalidJobError naming the key's type and the fix
    raise error


_EXPLAIN_UNHASHABLE = explain_unhashable_key.__code__


def is_checkpointed_function(function: Any) -> bool:
    """A user function with operator state of its own (Flink's CheckpointedFunction): it has both
    `initialize_state(context)` and `snapshot_state(context)`. PyFlink has no such base class, so the methods
    are what declares it."""
    return (
        callable(getattr(function, "initialize_state", None))
        and callable(getattr(function, "snapshot_state", None))
        and not isinstance(function, type)
    )


def label_failure(error: BaseException, operator_name: str) -> None:
    """Record on `error` which operator it came from. The innermost label wins: an error crossing several
    operator boundaries on its way up keeps the name of the operator that raised it."""
    if getattr(error, _OPERATOR_LABEL, None) is None:
        try:
            setattr(error, _OPERATOR_LABEL, operator_name)
        except (AttributeError, TypeError):  # an exception type without a __dict__: left unlabelled
            pass


def close_each(operators: Iterable[Any]) -> list[BaseException]:
    """Close every operator, also after one fails (each must release what it holds); the errors, each labelled
    with the operator that raised it, in order."""
    errors: list[BaseException] = []
    for operator in operators:
        try:
            operator.close()
        except BaseException as error:  # noqa: BLE001 - returned to the caller, which reports them
            label_failure(error, operator.name)
            errors.append(error)
    return errors


def failing_operator(error: BaseException) -> str | None:
    return getattr(error, _OPERATOR_LABEL, None)


def labelled_input(call: Callable[[Any], None], operator: Any) -> Callable[[Any], None]:
    """`call` (an input method of `operator`) behind a boundary that labels what escapes it with
    `operator.failure_name`. One frame per buffer, never per record; a `try` costs nothing until something
    raises."""

    def push(item: Any) -> None:
        try:
            call(item)
        except BaseException as error:
            label_failure(error, operator.failure_name(error))
            raise

    return push


def counted_input(call: Callable[[Any], None], operator: Any, counter: Any) -> Callable[[Any], None]:
    """`labelled_input` that also adds each buffer's length to `counter` (the operator's numRecordsIn)."""

    def push(batch: Any) -> None:
        counter.count += len(batch.values)
        try:
            call(batch)
        except BaseException as error:
            label_failure(error, operator.failure_name(error))
            raise

    return push


class Input(Protocol):
    """Where one input's records, watermarks and idleness arrive (Flink's Input): a one-input operator itself, or
    an OperatorInput of a two-input operator."""

    def process_batch(self, batch: RecordBatch) -> None: ...

    def process_watermark(self, watermark: Watermark) -> None: ...

    def process_status(self, status: WatermarkStatus) -> None: ...


class OperatorInput:
    """One logical input of a two-input operator (Flink's Input): its entry points, bound once at wiring."""

    __slots__ = ("process_batch", "process_watermark", "process_status")

    def __init__(
        self,
        process_batch: Callable[[RecordBatch], None],
        process_watermark: Callable[[Watermark], None],
        process_status: Callable[[WatermarkStatus], None],
    ) -> None:
        self.process_batch = process_batch
        self.process_watermark = process_watermark
        self.process_status = process_status


class StreamOperator:
    """Base: holds the spec, the context and the output; user functions opened and closed around the run.

    Declared per class: `keyed` (a keyed backend even without a key selector), `uses_timers` (an
    InternalTimerService, checkpointed with the keyed state), `holds_input` (see step 5 above), and for the task's
    metrics `one_output_per_input` (it emits exactly one record per record it takes, so a fused run's metrics can
    derive its count from the run's entry) and `members` (a fused run's operators, in order; None otherwise).
    `new_key_check`: a typed key_by's check, for the keyed operators that check each key where they first meet it
    (`deployment.checks_the_keys_it_meets`); the chain sets it, None checks nothing."""

    keyed = False
    uses_timers = False
    holds_input = False
    one_output_per_input = False
    members: list[StreamOperator] | None = None
    new_key_check: Callable[[Any], None] | None = None

    def __init__(self, spec: t.OperatorSpec, context: OperatorContext) -> None:
        self.spec = spec
        self.context = context
        self.name = context.operator_name
        # wired by setup() before anything reads it, so typed as what every reader sees; None until then (the
        # members of a fused run are never wired: the run emits for them), which the type cannot say
        self.output: Output = None  # type: ignore[assignment]
        # a KeyedStateBackend when the class is `keyed` or the spec has a key selector: keyed classes declare it
        # so; the others use it only where their key selector is set, which the type cannot follow
        self.keyed_backend: Any = None
        if spec.key_selector is not None or self.keyed:
            self.keyed_backend = context.create_keyed_backend()
        self.runtime_context = StreamingRuntimeContext(context, self.keyed_backend)
        self.current_watermark = MIN_WATERMARK
        self.timers: InternalTimerService | None = None  # once initialize_state ran, when the class uses timers
        self.function_state: OperatorStateStore | None = None  # when the user function is a CheckpointedFunction

    # -- failures -----------------------------------------------------------------------------------------------

    def failure_name(self, error: BaseException) -> str:
        """Whose failure `error` is: the key_by's when it escaped this operator's call of a key selector (as when
        the key is computed for partitioning, `writer.partitioning_name`), else this operator's."""
        return self.key_failure_name(error) or self.name

    def key_failure_name(self, error: BaseException) -> str | None:
        selectors = [s for s in (self.spec.key_selector, self.spec.key_selector2) if s is not None]
        if not selectors:
            return None
        callee = called_key(error)
        if callee is None:
            return None
        for selector in selectors:
            if callee == key_function(selector):
                return key_by_name(selector)
        return key_by_name(selectors[0])  # an unhashable key (or a key function the operator derived)

    # -- wiring -------------------------------------------------------------------------------------------------

    def setup(self, output: Output) -> None:
        self.output = output

    def input(self, type_number: int) -> Input:
        """The Input that receives the records of input `type_number` (0: the only input)."""
        if type_number != 0:
            raise InvalidJobError(f"'{self.name}' has one input; it cannot take records on input {type_number}")
        return self

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def initialize_state(self, restore: OperatorRestore | None) -> None:
        """Step 2: keyed state, timers and a CheckpointedFunction's operator state, from `restore` (an
        OperatorRestore) or empty."""
        if restore is not None and self.keyed_backend is not None and restore.keyed:
            try:
                self.keyed_backend.restore(restore.keyed, restore.reader, restore.checkpoint_id, restore.owned)
            except UnreadableStateError as error:
                raise UnreadableStateError(
                    f"operator '{self.name}' cannot restore its keyed state of checkpoint {restore.checkpoint_id} "
                    f"from {', '.join(restore.sources) or 'its state handles'}: {error}"
                ) from error
        if self.uses_timers and self.keyed_backend is not None:
            from fluvial.runtime.timers import InternalTimerService

            self.timers = timers = InternalTimerService(
                self.keyed_backend, self, self.context.processing_time_service, end_of_input_only=self.spec.batch
            )
            if restore is not None and restore.timers:
                timers.restore_key_groups(restore.timers, self.context.key_group_range())
        function = self.spec.function
        if is_checkpointed_function(function):
            from fluvial.runtime.operators.operator_state import FunctionInitializationContext, OperatorStateStore

            self.function_state = store = OperatorStateStore(restore.operator_state if restore is not None else None)
            function.initialize_state(FunctionInitializationContext(store, self.runtime_context))

    def open(self) -> None:
        function = self.spec.function
        opener = getattr(function, "open", None)
        if opener is not None and callable(opener) and not isinstance(function, type):
            opener(self.runtime_context)

    def process_batch(self, batch: RecordBatch) -> None:
        raise NotImplementedError

    def process_watermark(self, watermark: Watermark) -> None:
        self.current_watermark = watermark.timestamp
        self.output.emit_watermark(watermark)

    def process_status(self, status: WatermarkStatus) -> None:
        """An input became idle or active again; a one-input operator passes it on."""
        self.output.emit_watermark_status(status)

    def on_event_time(self, timer: Timer) -> None:
        """An event-time timer fired (operators that declare `uses_timers` handle them: Flink's Triggerable)."""
        raise NotImplementedError

    def on_processing_time(self, timer: Timer) -> None:
        """A processing-time timer fired (see `on_event_time`)."""
        raise NotImplementedError

    def finish(self) -> None:
        """All input has arrived; emit what is still held."""

    def input_blocked(self) -> bool:
        """Only asked of operators that `holds_input`: True while they can take no more input."""
        return False

    def is_quiescent(self) -> bool:
        """After `finish()`: True once nothing the operator holds is still to be emitted."""
        return True

    def close(self) -> None:
        try:
            closer = getattr(self.spec.function, "close", None)
            if closer is not None and callable(closer) and not isinstance(self.spec.function, type):
                closer()
        finally:
            if self.keyed_backend is not None:
                self.keyed_backend.dispose()

    # -- checkpoints (on the task thread) ------------------------------------------------------------------------

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """Before the barrier is passed on (Flink's prepareSnapshotPreBarrier): emit what the operator holds
        outside its state (a mini-batch's bundle), so the checkpoint covers it downstream. Called head first."""

    def snapshot_state(self, checkpoint_id: int, snapshot_type: Any) -> OperatorSnapshot | None:
        """The synchronous part: the keyed backend's pending snapshot (its cheapest freeze), timers by key group,
        and operator state; None when the operator holds none."""
        from fluvial.checkpoint.snapshots import OperatorSnapshot

        snapshot = OperatorSnapshot(self.context.operator_id)
        if self.keyed_backend is not None:
            snapshot.keyed = self.keyed_backend.snapshot(checkpoint_id, snapshot_type)
        if self.timers is not None:
            snapshot.timers = self.timers.snapshot_by_key_group(self.context.max_parallelism)
        snapshot.operator_state = self.snapshot_operator_state(checkpoint_id)
        if snapshot.keyed is None and not snapshot.timers and not snapshot.operator_state:
            return None
        return snapshot

    def snapshot_operator_state(self, checkpoint_id: int) -> dict[str, list[Any]]:
        """A CheckpointedFunction's lists; operators with operator state of their own override this."""
        if self.function_state is None:
            return {}
        from fluvial.runtime.operators.operator_state import FunctionSnapshotContext

        self.spec.function.snapshot_state(FunctionSnapshotContext(checkpoint_id))
        return self.function_state.snapshot()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.keyed_backend is not None:
            self.keyed_backend.notify_checkpoint_complete(checkpoint_id)  # an incremental backend's next base
        notify = getattr(self.spec.function, "notify_checkpoint_complete", None)
        if callable(notify):
            notify(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        if self.keyed_backend is not None:
            self.keyed_backend.notify_checkpoint_aborted(checkpoint_id)
        notify = getattr(self.spec.function, "notify_checkpoint_aborted", None)
        if callable(notify):
            notify(checkpoint_id)


class TwoInputStreamOperator(StreamOperator):
    """An operator with two inputs: `process_batch1/2`, `process_watermark1/2`, `process_status1/2`.

    Its event-time clock is the minimum of both inputs' clocks (DESIGN 2.4), and it is idle only while both
    inputs are."""

    def __init__(self, spec: t.OperatorSpec, context: OperatorContext) -> None:
        super().__init__(spec, context)
        from fluvial.runtime.watermarks import MultiInputWatermark

        self._input_clocks = MultiInputWatermark()
        self._inputs = (
            OperatorInput(self.process_batch1, self.process_watermark1, partial(self._input_status, 1)),
            OperatorInput(self.process_batch2, self.process_watermark2, partial(self._input_status, 2)),
        )
        self._idle = [False, False]

    def input(self, type_number: int) -> Input:
        if type_number not in (1, 2):
            raise InvalidJobError(f"'{self.name}' has two inputs; records must arrive on input 1 or 2")
        return self._inputs[type_number - 1]

    def process_batch(self, batch: RecordBatch) -> None:
        raise InvalidJobError(f"'{self.name}' has two inputs; records must arrive on input 1 or 2")

    def process_batch1(self, batch: RecordBatch) -> None:
        raise NotImplementedError

    def process_batch2(self, batch: RecordBatch) -> None:
        raise NotImplementedError

    def process_watermark1(self, watermark: Watermark) -> None:
        self._input_watermark(1, watermark)

    def process_watermark2(self, watermark: Watermark) -> None:
        self._input_watermark(2, watermark)

    def _input_watermark(self, input_number: int, watermark: Watermark) -> None:
        combined = self._input_clocks.update(input_number - 1, watermark.timestamp)
        if combined is not None:
            self.process_watermark(Watermark(combined))

    def _input_status(self, input_number: int, status: WatermarkStatus) -> None:
        """An idle input leaves the minimum until it is active again; the operator is idle when both are."""
        clocks = self._input_clocks
        index = input_number - 1
        was_idle = all(self._idle)
        self._idle[index] = status.idle
        combined = clocks.mark_idle(index) if status.idle else clocks.mark_active(index)
        if combined is not None:
            self.process_watermark(Watermark(combined))
        if all(self._idle) != was_idle:
            self.output.emit_watermark_status(WatermarkStatus(idle=all(self._idle)))
