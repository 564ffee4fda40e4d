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
from fluvial.runtime.records import END_OF_INPUT
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


@dataclass(frozen=True, slots=True)
class TaskFailure:
    """Why a task failed: the exception (with its traceback) and the operator that raised it."""

    error: BaseException
    operator_name: str
    task_name_with_subtasks: str
    traceback_text: str


@dataclass(slots=True)
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

    @property
    def execution_key(self) -> tuple[int, int]:
        return (self.vertex.id, self.subtask_index)


StateListener = Callable[["Task", TaskState, TaskFailure | None], None]


class Task:
    def __init__(self, spec: TaskSpec, channels: ChannelRegistry, executor: Any,
                 listener: StateListener, collect_target: Any = None) -> None:
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
            self.chain.open()
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
        self.chain = OperatorChain(spec.vertex, self._operator_context, writers)
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
        self.input = NetworkInput(channels, dispatch, InputWatermarks(head, type_numbers, writers), writable)

    def _operator_context(self, node: StreamNode) -> OperatorContext:
        return OperatorContext(self.info, node.name, node.max_parallelism, self.spec.job_parameters,
                               self._collect_target, self.processing_time, self.spec.auto_watermark_interval)

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
