"""Task: runs one attempt of one subtask of a JobVertex — its input, its OperatorChain and its record writers —
in steps driven by the one thread that owns it (DESIGN 4). Its lifecycle is an explicit state machine
(ExecutionState, guarded).

Protocol, numbered:
1. CREATED → INITIALIZING: `open()` builds the writers, the chain and the input, restores the operators'
   state (or initializes it empty) and opens them → RUNNING.
2. `step()` runs pending mails, then (if every output channel has room) one bounded input step.
3. When input ends: operators finish head to tail (an operator whose results come after its input, async I/O,
   may hold its inputs: while it says its input is blocked the task feeds it nothing, and at the end the task
   keeps running mails until it has emitted everything, `OperatorChain.finish`, never blocking the mailbox);
   END_OF_INPUT (end of data) goes to every output channel.
   Without checkpoints (or with `execution.checkpointing.checkpoints-after-tasks-finish` off) the task then
   closes its operators, sends END_OF_PARTITION and is FINISHED. With them (FLIP-147), it first waits, still
   RUNNING, for its final checkpoint: it tells its listener it reached the end of data, keeps taking part in
   checkpoints (a source is triggered, any other task gets the barrier through its input channels, which stay
   open for barriers until END_OF_PARTITION), and once a checkpoint it took after finishing completes — its
   two-phase-commit sinks commit then — it closes, sends END_OF_PARTITION and is FINISHED. So everything a
   bounded job emits is committed by a checkpoint, and a failure at any moment restores to a checkpoint that
   covers exactly what was committed.
4. An exception anywhere → operators close, FAILED; the listener hears which operator raised it (the label
   the chain boundary put on the error, else the chain's head).
5. `cancel()` from any thread becomes a mail: operators close → CANCELED. A task stuck in user code never reads
   that mail: `interrupt()` raises TaskInterrupted into its user code (`runtime.interruption`), which ends a
   busy loop; a task that still does not end is given up by its TaskManager (`abandon()`: CANCELED at once,
   its thread left behind; `cluster.task_canceler`).
6. stop-with-savepoint (Flink's synchronous savepoint): once the task has taken its snapshot for that savepoint it
   is suspended — it steps no input and runs no timer or operator mail (those wait, in order), only the
   JobMaster's mails: a source emits nothing after its barrier, so nothing after the barrier reaches any task.
   When the savepoint completes, the task is told first (two-phase-commit sinks commit what it covers), then
   ends FINISHED without finishing its operators (no end of input: a restore continues the stream); with
   --drain the operators finished before the barrier (`runtime.checkpointing`). When it is aborted, the task
   resumes: the waiting timers and mails run, and then its input, as if nothing had happened
   (`runtime.synchronous_savepoint` keeps this state).
Checkpoint triggers and notifications from the JobMaster are mails too; so operator state needs no lock.
While RUNNING, a timer takes a metrics snapshot every `metrics_interval_ms` and hands it to the task's
MetricsReporter; one more, marked final, goes out just before the task reports a terminal state, so the
JobMaster holds a task's last figures before it hears that the task ended.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.stop_mode import StopMode
from fluvial.common.task_info import TaskInfo
from fluvial.graph.stream_graph import StreamNode
from fluvial.runtime.chain import OperatorChain
from fluvial.runtime.channels import Channels, InputChannel, channel_state_key
from fluvial.runtime.deployment import TaskFailure, TaskSpec
from fluvial.runtime.execution_state import ExecutionState, checked_transition
from fluvial.runtime.executor import TaskExecutor, TaskProcessingTimeService
from fluvial.runtime.input_processor import (
    InputWatermarks,
    NetworkInput,
    SourceInput,
    StepResult,
)
from fluvial.runtime.interruption import InterruptibleSection
from fluvial.runtime.mailbox import Mailbox
from fluvial.runtime.operators.base import failing_operator, label_failure
from fluvial.runtime.operators.runtime_context import OperatorContext
from fluvial.runtime.records import END_OF_INPUT, END_OF_PARTITION, CheckpointBarrier
from fluvial.runtime.synchronous_savepoint import SynchronousSavepoint
from fluvial.runtime.task_metrics import TaskMetrics
from fluvial.runtime.task_restore import load_restores, replay_channel_state, restored_source_splits
from fluvial.runtime.writer import RecordWriter

if TYPE_CHECKING:
    from fluvial.common.executors import Executor
    from fluvial.runtime.checkpointing import (
        CheckpointResponder,
        CheckpointStorageProvider,
        SubtaskCheckpointCoordinator,
    )
    from fluvial.runtime.operators.runtime_context import CollectTarget

logger = logging.getLogger(__name__)


class MetricsReporter(Protocol):
    """Where a task sends its metrics snapshots (its TaskManager, on to the JobMaster). Never blocks."""

    def report(self, snapshot: Any) -> None: ...


class TaskStateListener(Protocol):
    """Hears every state a task reports (its TaskManager, which tells the JobMaster)."""

    def task_state_changed(self, task: Task, state: ExecutionState, failure: TaskFailure | None) -> None: ...

    def task_end_of_data(self, task: Task) -> None:
        """The task finished its input and its operators and now waits for its final checkpoint (FLIP-147); the
        JobMaster triggers one at once when every task of the job has reached this point."""
        ...


@dataclass
class TaskServices:
    """What a TaskManager gives each task it runs (Flink's task Environment)."""

    channels: Channels
    executor: TaskExecutor  # whose thread owns the task
    listener: TaskStateListener
    collect_target: Callable[[str], CollectTarget] | None = None  # the collect sink of a collect id
    checkpoint_storage: CheckpointStorageProvider | None = None  # when the job takes checkpoints
    checkpoint_io: Executor | None = None  # the executor of asynchronous snapshot parts
    checkpoint_responder: CheckpointResponder | None = None  # what answers the JobMaster
    receivers: Any = None  # ReceiverStreams of the task's job, for receiver sources
    metrics_reporter: MetricsReporter | None = None  # None: the task's metrics are kept, reported nowhere
    task_manager_id: str = ""  # the TaskManager's id, for the metrics' scope (`<tm_id>`)


class Task:
    def __init__(self, spec: TaskSpec, services: TaskServices) -> None:
        self.spec = spec
        self.state = ExecutionState.CREATED
        self._services = services
        self._executor = services.executor
        self.mailbox = Mailbox(self._executor.wake)
        vertex = spec.vertex
        self.info = TaskInfo(
            spec.job_id, vertex.name, spec.subtask_index, vertex.parallelism, vertex.max_parallelism, spec.attempt
        )
        self.chain: OperatorChain | None = None
        self.writers: list[RecordWriter] = []
        self.input: SourceInput | NetworkInput | None = None
        self.checkpointer: SubtaskCheckpointCoordinator | None = None  # when the job checkpoints
        self.metrics = TaskMetrics(self.info, vertex.id, spec.job_name, services.task_manager_id, vertex.is_source)
        self._input_ended = False
        self.awaiting_final_checkpoint = False  # input and operators finished; FINISHED once a checkpoint covers it
        self._closed = False
        self._user_code = InterruptibleSection()
        self._cancel_requested = False
        self._abandoned = False
        self._state_lock = threading.Lock()  # the owner thread and a TaskManager abandoning the task may race
        self._unaligned_input: NetworkInput | None = None  # the input, when barriers may overtake its buffers
        self._input_channels: list[InputChannel] = []
        self._stop = SynchronousSavepoint()  # step 6

    @property
    def name(self) -> str:
        return self.info.task_name_with_subtasks

    def _built_chain(self) -> OperatorChain:
        """The operator chain, which `open()` builds first: every path that needs it runs after that."""
        chain = self.chain
        if chain is None:
            raise RuntimeError(f"task {self.name} has no operator chain before open() builds it")
        return chain

    # -- lifecycle --------------------------------------------------------------------------------------------

    def open(self) -> None:
        """Step 1, on the executor thread."""
        try:
            self._move(ExecutionState.INITIALIZING)
            self._build()
            chain = self._built_chain()
            restores = load_restores(self.spec, self.info)
            head_operator_id = chain.head.context.operator_id
            restored_splits = restored_source_splits(self.spec, head_operator_id, restores)
            replay_channel_state(self.name, self.spec, self.input, restores.get(head_operator_id))
            chain.initialize_state(restores.get)
            self._user_code.run(chain.open)
            if isinstance(self.input, SourceInput):
                self.input.open(restored_splits)
            self._set_state(ExecutionState.RUNNING)
        except BaseException as exc:  # noqa: BLE001 - reported to the JobMaster
            self._fail(exc)
            return
        if self._services.metrics_reporter is not None:
            self._schedule_metrics_report()
        if self.spec.buffer_debloat is not None:
            self._start_debloating(self.spec.buffer_debloat)

    def _build(self) -> None:
        spec, services = self.spec, self._services
        wake = self._executor.wake
        writers: dict[str, RecordWriter] = {}
        peers = spec.channel_peers
        for output in spec.outputs:
            channels = [services.channels.output_channel(cid, peers.get(cid, -1)) for cid in output.channel_ids]
            for channel in channels:
                channel.set_producer_waker(wake)
            writers[output.dataset_id] = RecordWriter(output, channels, spec.subtask_index)
        self.writers = list(writers.values())
        self.chain = chain = OperatorChain(spec.vertex, self._operator_context, writers, spec.function_templates)
        self.metrics.bind(chain, self.writers)
        head = chain.head
        source_input = None
        if spec.vertex.is_source:
            fan_out = max((writer.fan_out for writer in self.writers), default=1)
            self.input = source_input = SourceInput.for_vertex(
                spec.vertex,
                self.info,
                head,
                spec.auto_watermark_interval,
                self._processing_time(head.name),
                services.receivers,
                fan_out,
            )
        if spec.checkpointing is not None:
            from fluvial.runtime.checkpointing import SubtaskCheckpointCoordinator

            storage, io = services.checkpoint_storage, services.checkpoint_io
            responder = services.checkpoint_responder
            if storage is None or io is None or responder is None:
                raise RuntimeError(
                    f"task {self.info.task_name_with_subtasks} takes checkpoints, and its TaskManager "
                    "gave it no checkpoint storage, no executor for their writes or no responder to the JobMaster"
                )
            self.checkpointer = SubtaskCheckpointCoordinator(
                chain, self.writers, source_input, storage, io, responder, self.info
            )
            self.checkpointer.on_synchronous_savepoint = self._suspend
        if source_input is None:
            self.input = self._network_input(head)

    def _network_input(self, head: Any) -> NetworkInput:
        spec = self.spec
        channels: list[InputChannel] = []
        dispatch, type_numbers = [], []
        for input_spec in spec.inputs:
            channel = self._services.channels.input_channel(
                input_spec.channel_id, spec.channel_peers.get(input_spec.channel_id, -1)
            )
            channel.set_consumer_waker(self._executor.wake)
            channels.append(channel)
            dispatch.append(head.input(input_spec.type_number).process_batch)
            type_numbers.append(input_spec.type_number)
        writers = self.writers
        writable = (lambda: all(writer.writable() for writer in writers)) if writers else None
        network_input = NetworkInput(
            channels, dispatch, InputWatermarks(head, type_numbers), writable, None, self.metrics.records_in
        )
        checkpointer, settings = self.checkpointer, spec.checkpointing
        if checkpointer is not None and settings is not None:
            from fluvial.runtime.alignment import BarrierHandler, UnalignedSettings

            unaligned = None
            if settings.unaligned_timeout_ms is not None and settings.exactly_once:
                unaligned = UnalignedSettings(settings.unaligned_timeout_ms)
                for channel in channels:
                    channel.set_barrier_listener(network_input.announce_barrier)
                self._unaligned_input = network_input
            network_input.attach_barriers(
                BarrierHandler(
                    len(channels),
                    settings.exactly_once,
                    checkpointer,
                    unaligned,
                    network_input,
                    self._schedule_look_ahead,
                    self._executor.clock,
                )
            )
            checkpointer.channel_keys = [channel_state_key(input_spec.channel_id) for input_spec in spec.inputs]
        self.metrics.input_channels = channels
        self._input_channels = channels
        return network_input

    def _schedule_look_ahead(self, due: int) -> None:
        """The alignment timeout of an aligned checkpoint that may turn unaligned."""
        self._executor.schedule(due, self, lambda now: self._look_ahead(), "alignment timeout")

    def _look_ahead(self) -> None:
        if self._unaligned_input is not None:  # the only input whose checkpoints arm an alignment timeout
            self._unaligned_input.look_ahead()

    def _processing_time(self, label: str) -> TaskProcessingTimeService:
        return TaskProcessingTimeService(self._executor, self, label)

    def _operator_context(self, node: StreamNode) -> OperatorContext:
        checkpointing = self.spec.checkpointing
        return OperatorContext(
            self.info,
            node.name,
            node.max_parallelism,
            self.spec.job_parameters,
            self._services.collect_target,
            self._processing_time(node.name),
            self.spec.auto_watermark_interval,
            node.operator_id,
            self.spec.state_backend,
            self.metrics.operator(node.operator_id, node.name),
            checkpointing is not None and checkpointing.final_checkpoint,
        )

    # -- checkpoints: mails from the JobMaster, run on the task thread ------------------------------------------

    def trigger_checkpoint(
        self, checkpoint_id: int, timestamp: int, savepoint_dir: str | None = None, stop: StopMode | None = None
    ) -> None:
        self.mailbox.put(partial(self._trigger_checkpoint, checkpoint_id, timestamp, savepoint_dir, stop))

    def _trigger_checkpoint(
        self, checkpoint_id: int, timestamp: int, savepoint_dir: str | None, stop: StopMode | None = None
    ) -> None:
        if self.checkpointer is None:
            return
        if self.state is not ExecutionState.RUNNING:
            reason = (
                CheckpointFailureReason.DECLINED_TASK_CLOSING
                if self.state.is_terminal
                else CheckpointFailureReason.DECLINED_TASK_NOT_READY
            )
            self.checkpointer.abort_checkpoint(checkpoint_id, reason, f"{self.name} is {self.state.value}")
            return
        try:
            if stop is StopMode.DRAIN and isinstance(self.input, SourceInput):
                self.input.advance_to_end_of_event_time()  # its watermark goes ahead of the barrier
            barrier = CheckpointBarrier(checkpoint_id, timestamp, savepoint_dir, stop)
            if self._unaligned_input is not None:  # its producers have all finished: see on_triggered
                self._unaligned_input.checkpoint_triggered(barrier)
            else:
                self.checkpointer.checkpoint_state(barrier)
        except BaseException as exc:  # noqa: BLE001 - the synchronous part failing fails the task
            self._fail(exc)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.mailbox.put(partial(self._notify_checkpoint, checkpoint_id, True))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.mailbox.put(partial(self._notify_checkpoint, checkpoint_id, False))

    def _notify_checkpoint(self, checkpoint_id: int, completed: bool) -> None:
        if self.state is not ExecutionState.RUNNING:
            return
        try:
            chain, checkpointer = self._built_chain(), self.checkpointer
            if completed:
                chain.notify_checkpoint_complete(checkpoint_id)
                if isinstance(self.input, SourceInput):
                    self.input.notify_checkpoint_complete(checkpoint_id)
                if self._stop.completed(checkpoint_id):
                    logger.info("%s stops: its stop-with-savepoint %d completed", self.name, checkpoint_id)
                    self._end_task()  # its operators close without finishing: no end of input
                elif (
                    self.awaiting_final_checkpoint
                    and checkpointer is not None
                    and checkpointer.is_final_checkpoint(checkpoint_id)
                ):
                    self._end_task()
            else:
                chain.notify_checkpoint_aborted(checkpoint_id)
                held = self._stop.aborted(checkpoint_id)
                if held is not None:
                    logger.info("%s resumes: its stop-with-savepoint %d was aborted", self.name, checkpoint_id)
                    for callback, now, label in held:  # what came due while it was suspended runs first
                        self.run_timer(callback, now, label)
        except BaseException as exc:  # noqa: BLE001
            self._fail(exc)

    # -- stop-with-savepoint (step 6) ---------------------------------------------------------------------------

    @property
    def suspended(self) -> bool:
        """Whether the task waits for the outcome of the stop-with-savepoint it took its snapshot for."""
        return self._stop.suspended_for is not None

    def _suspend(self, checkpoint_id: int) -> None:
        """The snapshot for stop-with-savepoint `checkpoint_id` is taken: nothing more runs until its outcome."""
        if self._stop.suspend(checkpoint_id):
            logger.debug("%s took its snapshot for stop-with-savepoint %d", self.name, checkpoint_id)

    # -- running ----------------------------------------------------------------------------------------------

    def step(self) -> StepResult:
        """One bounded unit of work on the owner thread. Never raises: failures become FAILED."""
        if self.mailbox.has_mail():
            self.mailbox.run_pending()
        if self.state is not ExecutionState.RUNNING:
            return StepResult.END_OF_INPUT
        if self._stop.suspended_for is not None:
            return StepResult.IDLE  # step 6: the JobMaster's mail about the savepoint wakes the task
        unaligned = self._unaligned_input
        if unaligned is not None and unaligned.barrier_announced:
            try:  # a barrier queued behind buffers: an unaligned checkpoint starts even while outputs are full
                unaligned.look_ahead()
            except BaseException as exc:  # noqa: BLE001 - the synchronous part failing fails the task
                self._fail(exc)
                return StepResult.END_OF_INPUT
        if self.awaiting_final_checkpoint:
            return self._step_awaiting_final_checkpoint()
        for writer in self.writers:
            if not writer.writable():
                return StepResult.BLOCKED
        chain, task_input = self.chain, self.input
        if chain is None or task_input is None:  # never: a task steps only once open() built it
            return StepResult.END_OF_INPUT
        try:
            if self._input_ended:
                return self._finish()
            if chain.holds_input and chain.input_blocked():
                return StepResult.BLOCKED
            result = self._user_code.run(task_input.step)
            if result is StepResult.END_OF_INPUT:
                self._input_ended = True
                return self._finish()
            return result
        except BaseException as exc:  # noqa: BLE001 - reported to the JobMaster
            self._fail(exc)
            return StepResult.END_OF_INPUT

    def _step_awaiting_final_checkpoint(self) -> StepResult:
        """Step 3's wait: a task with input channels still reads them, for the barriers of its final
        checkpoint and the END_OF_PARTITION of producers that ended; a source waits for its trigger mail."""
        task_input = self.input
        if task_input is None or isinstance(task_input, SourceInput) or task_input.all_partitions_ended:
            return StepResult.IDLE
        try:
            return task_input.step()
        except BaseException as exc:  # noqa: BLE001 - reported to the JobMaster
            self._fail(exc)
            return StepResult.END_OF_INPUT

    def run_timer(self, callback: Callable[[int], None], now: int, label: str) -> None:
        """A processing-time callback of operator `label`, on the owner thread; skipped once the task stopped
        running."""
        if self.state is not ExecutionState.RUNNING:
            return
        if self._stop.suspended_for is not None:
            self._stop.hold(callback, now, label)
            return
        try:
            self._user_code.run(callback, now)
        except BaseException as exc:  # noqa: BLE001 - reported to the JobMaster
            label_failure(exc, label)
            self._fail(exc)

    # -- buffer debloating (runtime.debloat) --------------------------------------------------------------------

    def _start_debloating(self, settings: Any) -> None:
        if isinstance(self.input, NetworkInput) and self._input_channels:
            from fluvial.runtime.debloat import BufferDebloater

            self.metrics.debloater = BufferDebloater(settings, self._input_channels, self._executor.clock())
        if isinstance(self.input, SourceInput):
            from fluvial.runtime.debloat import INITIAL_BUFFER_SIZE

            self.input.batch_size = INITIAL_BUFFER_SIZE  # its consumers start with buffers of that size
        self._schedule_debloat(settings.period_ms)

    def _schedule_debloat(self, period_ms: int) -> None:
        self._executor.schedule(
            self._executor.clock() + period_ms, self, lambda now: self._debloat(now, period_ms), "buffer debloating"
        )

    def _debloat(self, now: int, period_ms: int) -> None:
        """Each period: the input side sizes its channels' buffers to its throughput; a source reads no more per
        poll than its consumers' buffers take."""
        debloater = self.metrics.debloater
        if debloater is not None:
            debloater.update(now, self.metrics.records_in.count)
        if isinstance(self.input, SourceInput) and self.writers:
            from fluvial.runtime.input_processor import SOURCE_BATCH_SIZE

            self.input.batch_size = max(1, min(SOURCE_BATCH_SIZE, *(writer.buffer_size() for writer in self.writers)))
        self._schedule_debloat(period_ms)

    # -- metrics ------------------------------------------------------------------------------------------------

    def _schedule_metrics_report(self) -> None:
        self._executor.schedule(
            self._executor.clock() + self.spec.metrics_interval_ms, self, self._report_metrics, "metrics"
        )

    def _report_metrics(self, now: int) -> None:
        self._send_metrics(final=False)
        self._schedule_metrics_report()

    def _send_metrics(self, final: bool) -> None:
        """Metrics are for looking at the job, never a reason to fail it: a snapshot that cannot be taken or
        sent is logged and skipped."""
        reporter = self._services.metrics_reporter
        if reporter is None:
            return
        try:
            reporter.report(self.metrics.snapshot(final))
        except Exception:  # noqa: BLE001
            logger.warning("%s could not report its metrics", self.name, exc_info=True)

    def _finish(self) -> StepResult:
        """Step 3: input has ended."""
        if not self._built_chain().finish():
            return StepResult.IDLE  # an operator still awaits results; the mails that bring them wake the task
        settings = self.spec.checkpointing
        if settings is not None and settings.final_checkpoint:
            for writer in self.writers:
                writer.broadcast_event(END_OF_INPUT)
            self.awaiting_final_checkpoint = True
            if self.checkpointer is not None:
                self.checkpointer.input_finished()
            logger.debug("%s finished its input; it ends once a checkpoint covers it", self.name)
            self._services.listener.task_end_of_data(self)
            return StepResult.END_OF_INPUT
        return self._end_task()

    def _end_task(self) -> StepResult:
        """End the output channels (END_OF_PARTITION also means end of data to a consumer that has not seen
        END_OF_INPUT), close the operators, FINISHED. A close that raises fails the task."""
        self.awaiting_final_checkpoint = False
        for writer in self.writers:
            writer.broadcast_event(END_OF_PARTITION)
        errors = self._close()
        if errors:
            raise errors[0]
        self._set_state(ExecutionState.FINISHED)
        return StepResult.END_OF_INPUT

    def cancel(self) -> None:
        """Thread-safe: the owner thread closes the task at its next step."""
        self._cancel_requested = True
        self.mailbox.put(self._cancel_now)

    def interrupt(self) -> bool:
        """Thread-safe, after `cancel()`: raise TaskInterrupted into the user code the task's thread runs now
        (step 5). True when it was raised."""
        if not self._cancel_requested or self.state.is_terminal:
            return False
        return self._user_code.interrupt()

    def abandon(self) -> bool:
        """Thread-safe: give up a task whose thread does not come back from its user code. It is CANCELED at once
        (its listener hears it) and whatever its thread does later is ignored; its operators are never closed.
        False when the task had ended already."""
        with self._state_lock:
            if self.state.is_terminal:
                return False
            self._abandoned = True
            self.state = ExecutionState.CANCELED
        self._services.listener.task_state_changed(self, ExecutionState.CANCELED, None)
        return True

    @property
    def executor(self) -> TaskExecutor:
        """The TaskExecutor whose thread owns this task."""
        return self._executor

    def move_to(self, executor: TaskExecutor) -> None:
        """Called by the executor that owns the task, between its steps: from now on `executor`'s thread owns it
        (a task that blocked gets a thread of its own). Every wake-up the task gets is rebound to it."""
        self._executor = executor
        wake = executor.wake
        self.mailbox.set_waker(wake)
        for writer in self.writers:
            for channel in writer.channels:
                channel.set_producer_waker(wake)
        for channel in self._input_channels:
            channel.set_consumer_waker(wake)

    def _cancel_now(self) -> None:
        if not self.state.is_terminal:
            self._close()
            self._set_state(ExecutionState.CANCELED)

    def _close(self) -> list[BaseException]:
        """Close operators and input once: a close that raised while finishing must not run again in _fail."""
        if self._closed:
            return []
        self._closed = True
        if self.checkpointer is not None:
            self.checkpointer.close()
        errors = self.chain.close() if self.chain is not None else []
        if self.input is not None:
            try:
                self.input.close()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
        return errors

    def _fail(self, exc: BaseException) -> None:
        if self.state.is_terminal:
            return
        if self._cancel_requested:  # an interrupted cancel, or a failure while cancelling: the task is cancelled
            self._close()
            self._set_state(ExecutionState.CANCELED)
            return
        head = self.chain.head.failure_name(exc) if self.chain is not None else self.spec.vertex.name
        operator_name = failing_operator(exc) or head
        self._close()
        import traceback

        text = "".join(traceback.format_exception(exc))
        self._set_state(ExecutionState.FAILED, TaskFailure(exc, operator_name, self.name, text))

    def _move(self, state: ExecutionState) -> None:
        self.state = checked_transition(self.state, state, f"task {self.name} attempt {self.spec.attempt}")

    def _set_state(self, state: ExecutionState, failure: TaskFailure | None = None) -> None:
        with self._state_lock:
            if self._abandoned:
                return  # the TaskManager gave up on this thread: what it does now is no one's concern
            self._move(state)
        if state.is_terminal:
            self._send_metrics(final=True)
        self._services.listener.task_state_changed(self, state, failure)
