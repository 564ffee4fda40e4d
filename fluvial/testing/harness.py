"""OperatorHarness: one operator of a job, run by hand (Flink's AbstractStreamOperatorTestHarness).

Describe the operator the PyFlink way — the function you pass adds it to a stream — and drive it record by
record: elements with timestamps, watermarks, idleness, processing time on a ManualClock, end of input. Take a
snapshot mid-test through the real checkpoint path (the keyed backend's two halves, timers, operator state,
written to in-memory storage), restore it into a fresh harness — at another parallelism too — and check that
the operator goes on as if nothing happened. Output, side outputs and watermarks are captured in order.

    harness = OperatorHarness.of(lambda s: s.key_by(lambda v: v[0]).process(CountPerKey()))
    harness.open()
    harness.process_element(("a", 1), timestamp=10)
    harness.process_watermark(100)
    snapshot = harness.snapshot(checkpoint_id=1)
    restored = OperatorHarness.of(...).open(restore=[snapshot])

The harness owns the thread that calls it, as a task owns its operators: call it from one thread.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fluvial.common.key_groups import DEFAULT_MAX_PARALLELISM
from fluvial.common.task_info import TaskInfo
from fluvial.common.time import MAX_WATERMARK, ManualClock
from fluvial.datastream.output_tag import OutputTag
from fluvial.runtime.chain import OPERATOR_BUILDERS
from fluvial.runtime.operators.runtime_context import OperatorContext
from fluvial.runtime.output import Output
from fluvial.runtime.records import CheckpointBarrier, RecordBatch, StreamRecord, Watermark, WatermarkStatus

HARNESS_JOB_ID = "operator-harness"
HARNESS_OPERATOR_ID = "harnessed-operator"


class ManualProcessingTime:
    """The ProcessingTimeService of a harness: its clock is a ManualClock, and callbacks fire, in timestamp
    order, on the harness's thread when the harness moves the clock past them. `register_timer` is thread-safe,
    as the task's is: an operator's other threads (an async I/O loop) hand mails back through it, as callbacks
    due now, which `run_mails` fires."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self._callbacks: list[tuple[int, int, Callable[[int], None]]] = []
        self._sequence = itertools.count()
        self._registered = threading.Condition()

    def current_processing_time(self) -> int:
        """The manual clock's time in ms."""
        return self.clock()

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> None:
        """Call `callback(timestamp)` once the clock reaches `timestamp` (thread-safe).

        Args:
            timestamp: When, in ms.
            callback: What to call.
        """
        with self._registered:
            heapq.heappush(self._callbacks, (timestamp, next(self._sequence), callback))
            self._registered.notify_all()

    def advance_to(self, now: int) -> None:
        """Move the clock to `now` and fire every callback due by then (a callback may register more)."""
        self.clock.advance(max(0, now - self.clock()))
        while True:
            with self._registered:
                if not self._callbacks or self._callbacks[0][0] > now:
                    return
                _, _, callback = heapq.heappop(self._callbacks)
            callback(now)

    def wait_for_registration(self, timeout: float) -> None:
        """Wait until some callback is due now (at most `timeout` seconds)."""
        with self._registered:
            self._registered.wait_for(lambda: bool(self._callbacks) and self._callbacks[0][0] <= self.clock(), timeout)

    def pending(self) -> int:
        """How many callbacks wait for the clock."""
        with self._registered:
            return len(self._callbacks)

    def pending_timestamps(self) -> list[int]:
        """When each registered callback is due, soonest first (what a component asked to be woken for)."""
        return sorted(timestamp for timestamp, _, _ in self._callbacks)


class _CapturingOutput(Output):
    """Every output of the operator, in order: main records, side outputs by tag, watermarks, idleness."""

    def __init__(self, harness: OperatorHarness) -> None:
        super().__init__([harness._capture_main], {}, [harness._watermarks.append], [harness._statuses.append])
        self._harness = harness

    def collect_side(self, tag: OutputTag, batch: RecordBatch) -> None:
        self._harness._capture_side(tag, batch)

    def has_side(self, tag: OutputTag) -> bool:
        return True


@dataclass(frozen=True)
class OperatorSubtaskSnapshot:
    """A harness's snapshot: the operator's state handles for one checkpoint, and who took it."""

    checkpoint_id: int
    subtask_index: int
    parallelism: int
    max_parallelism: int
    state: Any  # the SubtaskState the checkpoint acknowledged (None: the operator had no state)


class OperatorHarness:
    """One operator, run by hand (Flink's operator test harness): see the module's documentation and
    [Testing your jobs](../testing.md).

    Example:
        ```python
        harness = OperatorHarness.of(lambda s: s.map(lambda v: v * 2))
        harness.open()
        harness.process_element(21)
        assert harness.values() == [42]
        ```
    """

    def __init__(
        self,
        spec: Any,
        name: str = "Operator",
        *,
        parallelism: int = 1,
        subtask_index: int = 0,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        attempt: int = 0,
        state_backend: Any = None,
        clock: ManualClock | None = None,
        job_parameters: dict[str, str] | None = None,
        batch: bool = False,
    ) -> None:
        """`batch`: run the operator as a job in BATCH execution mode would (`fluvial.graph.batch_mode`)."""
        builder = OPERATOR_BUILDERS.get(type(spec))
        if builder is None:
            raise TypeError(
                f"no runtime operator for {type(spec).__name__}: build the harness with "
                "OperatorHarness.of(lambda stream: stream.<operator>(...))"
            )
        if batch:
            from fluvial.graph.batch_mode import for_batch

            spec = for_batch(spec)
        self.clock = clock or ManualClock(0)
        self.processing_time = ManualProcessingTime(self.clock)
        self.info = TaskInfo(HARNESS_JOB_ID, name, subtask_index, parallelism, max_parallelism, attempt)
        context = OperatorContext(
            self.info,
            name,
            max_parallelism,
            job_parameters or {},
            processing_time_service=self.processing_time,
            operator_id=HARNESS_OPERATOR_ID,
            state_backend=state_backend,
        )
        self.operator = builder(spec, context)
        self._records: list[StreamRecord] = []
        self._side: dict[str, list[StreamRecord]] = {}
        self._watermarks: list[Watermark] = []
        self._statuses: list[WatermarkStatus] = []
        self.operator.setup(_CapturingOutput(self))
        self._storage: Any = None
        self._acknowledged: dict[int, dict] = {}
        self._open = False

    @staticmethod
    def of(describe: Callable[[Any], Any], **options: Any) -> OperatorHarness:
        """The harness of the last operator `describe(stream)` adds to a stream (a DataStream of no particular
        records); `options` as for the constructor."""
        return OperatorHarness._of_streams(describe, 1, options)

    @staticmethod
    def of_two_inputs(describe: Callable[[Any, Any], Any], **options: Any) -> OperatorHarness:
        """The harness of a two-input operator: `describe(first, second)`, e.g.
        `lambda a, b: a.connect(b).process(MyCoProcessFunction())`."""
        return OperatorHarness._of_streams(describe, 2, options)

    @staticmethod
    def _of_streams(describe: Callable[..., Any], inputs: int, options: dict) -> OperatorHarness:
        from fluvial.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        streams = [env.from_collection([]) for _ in range(inputs)]
        result = describe(*streams)
        transformation = result._transformation
        if transformation.operator is None or transformation.id in {s.get_transformation_id() for s in streams}:
            raise TypeError(
                "the function given to OperatorHarness.of must add an operator to the stream, e.g. "
                "lambda stream: stream.map(MyMapFunction())"
            )
        return OperatorHarness(transformation.operator, transformation.name, **options)

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def open(self, restore: list[OperatorSubtaskSnapshot] | None = None) -> OperatorHarness:
        """initialize_state (from the snapshots of any number of old subtasks, or empty), then open."""
        state = self._restore_from(restore) if restore else None
        self.operator.initialize_state(state)
        self.operator.open()
        self._open = True
        return self

    def end_input(self) -> OperatorHarness:
        """All input has arrived: the operator finishes (and emits what it still holds)."""
        self.operator.finish()
        return self

    def close(self) -> None:
        """Close the operator (calls its functions' `close()`); again does nothing."""
        if self._open:
            self._open = False
            self.operator.close()

    def __enter__(self) -> OperatorHarness:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- input --------------------------------------------------------------------------------------------------

    def process_element(self, value: Any, timestamp: int | None = None, input: int = 0) -> OperatorHarness:
        """Feed one record.

        Args:
            value: The record.
            timestamp: Its event timestamp, or None.
            input: 0 for a one-input operator; 1 or 2 for the inputs of a two-input one.

        Returns:
            This harness.
        """
        return self.process_elements([value], None if timestamp is None else [timestamp], input)

    def process_elements(self, values: list, timestamps: list[int] | None = None, input: int = 0) -> OperatorHarness:
        """One buffer of records (on input 1 or 2 of a two-input operator)."""
        self.operator.input(input).process_batch(
            RecordBatch(list(values), None if timestamps is None else list(timestamps))
        )
        return self

    def process_element1(self, value: Any, timestamp: int | None = None) -> OperatorHarness:
        """Feed one record to the first input of a two-input operator.

        Args:
            value: The record.
            timestamp: Its event timestamp, or None.

        Returns:
            This harness.
        """
        return self.process_element(value, timestamp, input=1)

    def process_element2(self, value: Any, timestamp: int | None = None) -> OperatorHarness:
        """Feed one record to the second input of a two-input operator.

        Args:
            value: The record.
            timestamp: Its event timestamp, or None.

        Returns:
            This harness.
        """
        return self.process_element(value, timestamp, input=2)

    def process_watermark(self, timestamp: int, input: int = 0) -> OperatorHarness:
        """Feed a watermark: event-time timers and windows up to it fire.

        Args:
            timestamp: The watermark (ms).
            input: The input it arrives on (0, or 1/2).

        Returns:
            This harness.
        """
        self.operator.input(input).process_watermark(Watermark(timestamp))
        return self

    def process_final_watermark(self, input: int = 0) -> OperatorHarness:
        """Feed the final watermark (end of event time): every event-time timer and window fires.

        Args:
            input: The input it arrives on.

        Returns:
            This harness.
        """
        return self.process_watermark(MAX_WATERMARK, input)

    def process_watermark_status(self, idle: bool, input: int = 0) -> OperatorHarness:
        """Mark an input idle or active again.

        Args:
            idle: True for idle.
            input: The input.

        Returns:
            This harness.
        """
        self.operator.input(input).process_status(WatermarkStatus(idle=idle))
        return self

    def set_processing_time(self, now: int) -> OperatorHarness:
        """Move the processing-time clock to `now`, firing every timer due by then."""
        self.processing_time.advance_to(now)
        return self

    def advance_processing_time(self, millis: int) -> OperatorHarness:
        """Move the manual processing-time clock forward, firing the processing-time timers it passes, in order.

        Args:
            millis: How far.

        Returns:
            This harness.
        """
        return self.set_processing_time(self.clock() + millis)

    def run_mails(self) -> OperatorHarness:
        """Run what other threads of the operator handed back so far (mails: callbacks due now), without moving
        the clock."""
        self.processing_time.advance_to(self.clock())
        return self

    def run_mails_until(
        self, condition: Callable[[OperatorHarness], bool], timeout: float = 10.0, what: str = "the condition"
    ) -> OperatorHarness:
        """Run mails as they arrive until `condition(harness)` holds; AssertionError naming `what` after
        `timeout` seconds. For operators whose results come from another thread (async I/O)."""
        deadline = time.monotonic() + timeout
        while True:
            self.run_mails()
            if condition(self):
                return self
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            self.processing_time.wait_for_registration(min(left, 0.05))

    # -- output -------------------------------------------------------------------------------------------------

    def _capture_main(self, batch: RecordBatch) -> None:
        self._records.extend(_records(batch))

    def _capture_side(self, tag: OutputTag, batch: RecordBatch) -> None:
        self._side.setdefault(tag.tag_id, []).extend(_records(batch))

    def output(self) -> list[StreamRecord]:
        """Every main-output record so far, with its timestamp."""
        return list(self._records)

    def values(self) -> list:
        """The values of every main-output record so far, in order."""
        return [record.value for record in self._records]

    def take(self) -> list[StreamRecord]:
        """The main-output records since the last take, and forget them."""
        records, self._records = self._records, []
        return records

    def take_values(self) -> list:
        """The values of the main-output records since the last take, which are then forgotten."""
        return [record.value for record in self.take()]

    def side_output(self, tag: OutputTag | str) -> list[StreamRecord]:
        """The records emitted to a side output.

        Args:
            tag: The OutputTag, or its id.

        Returns:
            The records, in order.
        """
        return list(self._side.get(tag.tag_id if isinstance(tag, OutputTag) else tag, []))

    def watermarks(self) -> list[int]:
        """The watermarks the operator emitted, in order."""
        return [watermark.timestamp for watermark in self._watermarks]

    def statuses(self) -> list[bool]:
        """The idleness the operator emitted, in order (True: idle)."""
        return [status.idle for status in self._statuses]

    # -- state --------------------------------------------------------------------------------------------------

    def keyed_state_entries(self) -> dict[str, int]:
        """State name → how many keys have an entry in it (only names with entries)."""
        backend = self.operator.keyed_backend
        if backend is None:
            return {}
        counts: dict[str, int] = {}
        for states in backend.snapshot_key_groups().key_groups.values():
            for name, entries in states.items():
                if entries:
                    counts[name] = counts.get(name, 0) + len(entries)
        return counts

    def timer_count(self) -> int:
        """How many timers (event and processing time) are registered."""
        timers = self.operator.timers
        return 0 if timers is None else timers.event_timer_count() + timers.processing_timer_count()

    def snapshot(self, checkpoint_id: int = 1, savepoint: bool = False) -> OperatorSubtaskSnapshot:
        """The operator's state through the real checkpoint path (synchronous part, then the asynchronous part,
        inline), as a checkpoint — or a self-contained savepoint — would take it."""
        from fluvial.runtime.checkpointing import SubtaskCheckpointCoordinator

        checkpointer = SubtaskCheckpointCoordinator(
            _SingleOperatorChain(self.operator), [], None, self, _Inline(), self, self.info
        )
        checkpointer.checkpoint_state(CheckpointBarrier(checkpoint_id, self.clock(), "harness" if savepoint else None))
        states = self._acknowledged.pop(checkpoint_id)
        return OperatorSubtaskSnapshot(
            checkpoint_id,
            self.info.subtask_index,
            self.info.parallelism,
            self.info.max_parallelism,
            states.get(HARNESS_OPERATOR_ID),
        )

    def notify_checkpoint_complete(self, checkpoint_id: int) -> OperatorHarness:
        """Tell the operator a checkpoint completed (two-phase-commit sinks commit here).

        Args:
            checkpoint_id: The checkpoint.

        Returns:
            This harness.
        """
        self.operator.notify_checkpoint_complete(checkpoint_id)
        return self

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> OperatorHarness:
        """Tell the operator a checkpoint was aborted.

        Args:
            checkpoint_id: The checkpoint.

        Returns:
            This harness.
        """
        self.operator.notify_checkpoint_aborted(checkpoint_id)
        return self

    def _restore_from(self, snapshots: list[OperatorSubtaskSnapshot]) -> Any:
        from fluvial.checkpoint.restore import subtask_assignment
        from fluvial.checkpoint.storage import OperatorState
        from fluvial.runtime.checkpointing import SubtaskCheckpointCoordinator

        first = snapshots[0]
        if first.max_parallelism != self.info.max_parallelism:
            raise ValueError(
                f"the snapshots were taken with max parallelism {first.max_parallelism}; restore them "
                f"into harnesses with that max parallelism, not {self.info.max_parallelism}"
            )
        old = OperatorState(
            HARNESS_OPERATOR_ID,
            first.parallelism,
            first.max_parallelism,
            {s.subtask_index: s.state for s in snapshots if s.state is not None},
        )
        assignment = subtask_assignment(old, first.checkpoint_id, self.info.parallelism, self.info.subtask_index)
        return SubtaskCheckpointCoordinator.load(assignment, HARNESS_OPERATOR_ID, self.info)

    # -- what the checkpointer needs of its surroundings (storage provider and responder) -----------------------

    def checkpoint_storage(self) -> Any:
        """The in-memory checkpoint storage snapshots are written to (the harness plays the task's part)."""
        if self._storage is None:
            from fluvial.checkpoint.storage import create_checkpoint_storage
            from fluvial.datastream.checkpoint_storage import JobManagerCheckpointStorage

            self._storage = create_checkpoint_storage(JobManagerCheckpointStorage(), HARNESS_JOB_ID)
        return self._storage

    def savepoint_storage(self, directory: str) -> Any:
        """The storage of a savepoint: the same in-memory storage.

        Args:
            directory: Ignored.

        Returns:
            The storage.
        """
        return self.checkpoint_storage()

    def acknowledge(self, checkpoint_id: int, states: dict, metrics: Any = None) -> None:
        """Receive the operator's acknowledgement of a snapshot (the harness plays the JobMaster's part).

        Args:
            checkpoint_id: The checkpoint.
            states: The snapshot's state handles.
            metrics: The snapshot's figures (sizes, durations), if any.
        """
        self._acknowledged[checkpoint_id] = states

    def decline(self, checkpoint_id: int, reason: Any, detail: str = "") -> None:
        """Receive a failed snapshot: fails the test.

        Args:
            checkpoint_id: The checkpoint.
            reason: Why it failed.
            detail: More about it.

        Raises:
            AssertionError: always, naming the checkpoint and the reason.
        """
        raise AssertionError(f"the snapshot of checkpoint {checkpoint_id} failed: {reason.value} ({detail})")


class _SingleOperatorChain:
    __slots__ = ("order", "head")

    def __init__(self, operator: Any) -> None:
        self.order = [operator]
        self.head = operator


class _Inline:
    """An Executor that runs each mail at once, on the caller's thread."""

    def execute(self, mail: Callable[[], None]) -> bool:
        mail()
        return True


def _records(batch: RecordBatch) -> list[StreamRecord]:
    stamps = batch.timestamps or [None] * len(batch.values)
    return [StreamRecord(value, stamp) for value, stamp in zip(batch.values, stamps)]
