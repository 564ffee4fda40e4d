"""Task: runs one subtask of a JobVertex — its input, its OperatorChain and its record writers — in steps
driven by the one thread that owns it (DESIGN 4). Its lifecycle is an explicit state machine.

Protocol, numbered:
1. CREATED → `open()` builds the chain, the writers and the input, opens operators → RUNNING.
2. `step()` runs pending mails, then (if every output channel has room) one bounded input step.
3. When input ends: operators are flushed head to tail, END_OF_INPUT goes to every output channel, operators
   close → FINISHED.
4. An exception anywhere → operators close, FAILED, the listener hears which operator raised it.
5. `cancel()` from any thread becomes a mail: operators close → CANCELED.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable

from fluvial.common.task_info import TaskInfo
from fluvial.graph.job_graph import JobVertex
from fluvial.graph.stream_graph import StreamNode
from fluvial.runtime.chain import OperatorChain
from fluvial.runtime.channels import ChannelRegistry
from fluvial.runtime.executor import TaskProcessingTimeService
from fluvial.runtime.input_processor import InputWatermarks, NetworkInput, SourceInput, StepResult
from fluvial.runtime.mailbox import Mailbox
from fluvial.runtime.operators import FusedStatelessOperator, StreamOperator
from fluvial.runtime.records import END_OF_INPUT, CheckpointBarrier
from fluvial.runtime.runtime_context import OperatorContext
from fluvial.runtime.writer import InputSpec, OutputSpec, RecordWriter


class TaskState(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        return self in (TaskState.FINISHED, TaskState.CANCELED, TaskState.FAILED)


@dataclass(frozen=True)
class TaskFailure:
    """Why a task failed: the exception (with its traceback) and the operator that raised it."""

    error: BaseException
    operator_name: str
    task_name_with_subtasks: str
    traceback_text: str


@dataclass
class TaskSpec:
    """Everything a TaskManager needs to run one subtask; built by the JobMaster."""

    job_id: str
    vertex: JobVertex
    subtask_index: int
    attempt: int
    inputs: list[InputSpec]
    outputs: list[OutputSpec]
    job_parameters: dict[str, str] = field(default_factory=dict)
    auto_watermark_interval: int = 200
    checkpointing: Any = None  # TaskCheckpointSettings when the job takes checkpoints
    restore: dict[str, Any] | None = None  # operator id -> the RestoreAssignment it restores from
    function_templates: dict[int, Any] | None = None  # node id -> pristine function, for restarted attempts
    state_backend: Any = None  # the job's StateBackend description

    @property
    def execution_key(self) -> tuple[int, int]:
        return (self.vertex.id, self.subtask_index)


StateListener = Callable[["Task", TaskState, TaskFailure | None], None]


class Task:
    def __init__(self, spec: TaskSpec, channels: ChannelRegistry, executor: Any,
                 listener: StateListener, collect_target: Any = None, checkpoint_services: Any = None) -> None:
        self.spec = spec
        self.state = TaskState.CREATED
        self.mailbox = Mailbox(executor.wake)
        self._channels = channels
        self._wake = executor.wake
        self.processing_time = TaskProcessingTimeService(executor, self)
        self._listener = listener
        self._collect_target = collect_target
        vertex = spec.vertex
        self.info = TaskInfo(spec.job_id, vertex.name, spec.subtask_index, vertex.parallelism,
                             vertex.max_parallelism, spec.attempt)
        self.checkpointer: Any = None  # a SubtaskCheckpointer when the job checkpoints or restores
        if spec.checkpointing is not None or spec.restore:
            from fluvial.runtime.checkpointing import SubtaskCheckpointer

            services = checkpoint_services
            self.checkpointer = SubtaskCheckpointer(
                self,
                services.storage(spec.job_id, spec.checkpointing.storage if spec.checkpointing else None),
                lambda directory: services.savepoint_storage(directory, spec.job_id),
                services.pool(),
                lambda cid, states: services.acknowledge(self, cid, states),
                lambda cid, reason: services.decline(self, cid, reason),
            )
        self.chain: OperatorChain | None = None
        self.writers: list[RecordWriter] = []
        self.input: Any = None
        self._closed = False

    @property
    def name(self) -> str:
        return self.info.task_name_with_subtasks

    # -- lifecycle --------------------------------------------------------------------------------------------

    def open(self) -> None:
        try:
            self._build()
            restored_splits = self._restore_operators()
            self.chain.open()
            if isinstance(self.input, SourceInput):
                self.input.open(restored_splits)
            else:
                self.input.open()
            self._set_state(TaskState.RUNNING)
        except BaseException as exc:  # noqa: BLE001 - reported to the JobMaster
            self._fail(exc)

    def _build(self) -> None:
        spec = self.spec
        writers: dict[str, RecordWriter] = {}
        for output in spec.outputs:
            channels = [self._channels.get(cid) for cid in output.channel_ids]
            for channel in channels:
                channel.set_producer_waker(self._wake)
            writers[output.dataset_id] = RecordWriter(output, channels, spec.subtask_index)
        self.writers = list(writers.values())
        self.chain = OperatorChain(spec.vertex, self._operator_context, writers, spec.function_templates)
        head = self.chain.head
        if spec.vertex.is_source:
            source_spec = spec.vertex.head.operator
            self.input = SourceInput(source_spec.function, self.info, source_spec.watermark_strategy,
                                     spec.auto_watermark_interval, self.processing_time, head.output)
            return
        channels, dispatch, type_numbers = [], [], []
        for input_spec in spec.inputs:
            channel = self._channels.get(input_spec.channel_id)
            channel.set_consumer_waker(self._wake)
            channels.append(channel)
            dispatch.append(_dispatcher(head, input_spec.type_number))
            type_numbers.append(input_spec.type_number)
        writers = self.writers
        writable = (lambda: all(writer.writable() for writer in writers)) if writers else None
        barriers = None
        if self.checkpointer is not None and spec.checkpointing is not None:
            checkpointer = self.checkpointer
            from fluvial.checkpoint.alignment import BarrierHandler

            barriers = BarrierHandler(len(channels), spec.checkpointing.exactly_once, checkpointer.perform,
                                      lambda cid: checkpointer._decline(cid, "a newer barrier overtook it"))
        self.input = NetworkInput(channels, dispatch, InputWatermarks(head, type_numbers, writers), writable,
                                  barriers)

    def _operator_context(self, node: StreamNode) -> OperatorContext:
        return OperatorContext(self.info, node.name, node.max_parallelism, self.spec.job_parameters,
                               self._collect_target, self.processing_time, self.spec.auto_watermark_interval,
                               node.operator_id, self.spec.state_backend)

    def _restore_operators(self) -> list | None:
        """Hand each operator its share of the checkpoint before it opens; return a source's split positions."""
        restore = self.spec.restore
        if not restore:
            return None
        restored_splits = None
        for operator in self.chain.order:
            assignment = restore.get(operator.context.operator_id)
            if assignment is None:
                continue
            state = self.checkpointer.load(assignment, operator.context.operator_id)
            if operator is self.chain.head and self.spec.vertex.is_source:
                from fluvial.runtime.checkpointing import SOURCE_SPLITS

                restored_splits = state.operator_state.pop(SOURCE_SPLITS, [])
            operator.initialize_state(state)
        if self.spec.vertex.is_source and restored_splits is None:
            head_id = self.chain.head.context.operator_id
            restored_splits = [] if head_id in restore else None
        return restored_splits

    # -- checkpoints: mails from the JobMaster, run on the task thread ------------------------------------------

    def trigger_checkpoint(self, checkpoint_id: int, timestamp: int, savepoint_dir: str | None = None) -> None:
        self.mailbox.put(lambda: self._trigger_checkpoint(checkpoint_id, timestamp, savepoint_dir))

    def _trigger_checkpoint(self, checkpoint_id: int, timestamp: int, savepoint_dir: str | None) -> None:
        if self.state is not TaskState.RUNNING or self.checkpointer is None:
            if self.checkpointer is not None:
                self.checkpointer._decline(checkpoint_id, f"task {self.name} is {self.state.value}")
            return
        try:
            self.checkpointer.perform(CheckpointBarrier(checkpoint_id, timestamp, savepoint_dir))
        except BaseException as exc:  # noqa: BLE001 - the synchronous part failing fails the task
            self._fail(exc)

    def notify_checkpoint(self, checkpoint_id: int, completed: bool) -> None:
        self.mailbox.put(lambda: self._notify_checkpoint(checkpoint_id, completed))

    def _notify_checkpoint(self, checkpoint_id: int, completed: bool) -> None:
        if self.state is not TaskState.RUNNING or self.chain is None:
            return
        try:
            for operator in self.chain.order:
                if completed:
                    operator.notify_checkpoint_complete(checkpoint_id)
                else:
                    operator.notify_checkpoint_aborted(checkpoint_id)
            if completed and isinstance(self.input, SourceInput):
                self.input.notify_checkpoint_complete(checkpoint_id)
        except BaseException as exc:  # noqa: BLE001
            self._fail(exc)

    def step(self) -> StepResult:
        """One bounded unit of work on the owner thread. Never raises: failures become FAILED."""
        if self.mailbox.has_mail():
            self.mailbox.run_pending()
        if self.state is not TaskState.RUNNING:
            return StepResult.END_OF_INPUT
        for writer in self.writers:
            if not writer.writable():
                return StepResult.BLOCKED
        try:
            result = self.input.step(self.chain.head.process_batch)
            if result is StepResult.END_OF_INPUT:
                self._finish()
            return result
        except BaseException as exc:  # noqa: BLE001 - reported to the JobMaster
            self._fail(exc)
            return StepResult.END_OF_INPUT

    def run_timer(self, callback: Callable[[int], None], now: int) -> None:
        """A processing-time callback, on the owner thread; skipped once the task stopped running."""
        if self.state is not TaskState.RUNNING:
            return
        try:
            callback(now)
        except BaseException as exc:  # noqa: BLE001 - reported to the JobMaster
            self._fail(exc)

    def _finish(self) -> None:
        self.chain.end_input()
        for writer in self.writers:
            writer.broadcast_event(END_OF_INPUT)
        errors = self._close()
        if errors:
            raise errors[0]
        self._set_state(TaskState.FINISHED)

    def cancel(self) -> None:
        """Thread-safe: the owner thread closes the task at its next step."""
        self.mailbox.put(self._cancel_now)

    def _cancel_now(self) -> None:
        if not self.state.is_terminal:
            self._close()
            self._set_state(TaskState.CANCELED)

    def _close(self) -> list[BaseException]:
        """Close operators and input once: a close that raised while finishing must not run again in _fail."""
        if self._closed:
            return []
        self._closed = True
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
        operator_name = _raising_operator_name(exc) or self.spec.vertex.name
        self._close()
        import traceback

        text = "".join(traceback.format_exception(exc))
        failure = TaskFailure(exc, operator_name, self.name, text)
        self._set_state(TaskState.FAILED, failure)

    def _set_state(self, state: TaskState, failure: TaskFailure | None = None) -> None:
        self.state = state
        self._listener(self, state, failure)


def _dispatcher(head: Any, type_number: int) -> Callable[[Any], None]:
    if type_number == 1:
        return lambda batch: head.process_batch1(batch)
    if type_number == 2:
        return lambda batch: head.process_batch2(batch)
    return lambda batch: head.process_batch(batch)


def _raising_operator_name(exc: BaseException) -> str | None:
    """The innermost operator on the failing call stack: whose user code raised. In a fused run of
    operators, the member whose user function's code is on the stack."""
    found = None
    codes = []
    tb = exc.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, StreamOperator):
            found, codes = candidate, []
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    if found is None:
        return None
    if isinstance(found, FusedStatelessOperator):
        for code in codes:
            name = found.operator_for_code(code)
            if name is not None:
                return name
    return found.name

