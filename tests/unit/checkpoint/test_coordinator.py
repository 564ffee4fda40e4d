"""CheckpointCoordinator stepped by hand, as Flink's CheckpointCoordinatorTest steps its own: the timer and the I/O
executor are ManualScheduledExecutors on one ManualClock, the subtasks a recording fake of CheckpointTasks.
Nothing here sleeps: each test decides when a mail runs and when time passes.

Covered: the periodic trigger and its plan, tasks not ready, the minimum pause, the maximum of concurrent
checkpoints, timeouts, which decline reasons count against the tolerable failures, subsumption, a failing
`_metadata` write, savepoints, checkpoint ids continuing from a restore, the statistics, the log lines, and
(hypothesis) that no order of acks, declines and timeouts completes a checkpoint twice or leaves one pending.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.checkpoint.coordinator import RETRY_MS, CheckpointCoordinator
from fluvial.checkpoint.failure_manager import CheckpointFailuresExceededError
from fluvial.checkpoint.failure_reason import CheckpointFailureReason as Reason
from fluvial.checkpoint.pending import AckResult
from fluvial.checkpoint.plan import CheckpointPlan
from fluvial.checkpoint.storage import SubtaskState, create_checkpoint_storage
from fluvial.checkpoint.store import CompletedCheckpointStore
from fluvial.datastream.checkpoint_config import CheckpointSettings
from fluvial.datastream.checkpoint_storage import JobManagerCheckpointStorage
from fluvial.datastream.checkpointing_mode import CheckpointingMode
from fluvial.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from fluvial.testing import ManualClock, ManualScheduledExecutor

JOB = "job-coordinator"
SOURCE = (1, 0)
MAPS = [(2, 0), (2, 1)]
ALL = [SOURCE, *MAPS]
INTERVAL, TIMEOUT = 100, 1_000


class Tasks:
    """CheckpointTasks that record what the coordinator asks of the subtasks."""

    def __init__(self) -> None:
        self.plan = CheckpointPlan([SOURCE], set(ALL))
        self.refusal: Reason | None = None
        self.triggered: list[tuple[tuple[int, int], int, str | None]] = []
        self.completed: list[int] = []
        self.aborted: list[int] = []
        self.failures: list[BaseException] = []

    def checkpoint_plan(self):
        return self.refusal or self.plan

    def trigger(self, task, checkpoint_id, timestamp, savepoint_dir, stop=None) -> None:
        self.triggered.append((task, checkpoint_id, savepoint_dir))

    def notify_complete(self, checkpoint_id: int) -> None:
        self.completed.append(checkpoint_id)

    def notify_aborted(self, checkpoint_id: int) -> None:
        self.aborted.append(checkpoint_id)

    def fail_job(self, error: BaseException) -> None:
        self.failures.append(error)

    def triggered_ids(self) -> list[int]:
        return sorted({checkpoint_id for _, checkpoint_id, _ in self.triggered})


class RecordingStorage:
    """The JobManager's in-memory storage, recording discards; `fail_metadata` makes the next metadata write raise."""

    def __init__(self, name: str = JOB) -> None:
        self._inner = create_checkpoint_storage(JobManagerCheckpointStorage(), name)
        self.discarded: list[int] = []
        self.discarded_shared: list = []
        self.metadata_written: list[int] = []
        self.fail_metadata: BaseException | None = None

    def write_metadata(self, checkpoint_id, metadata):
        if self.fail_metadata is not None:
            error, self.fail_metadata = self.fail_metadata, None
            raise error
        self.metadata_written.append(checkpoint_id)
        return self._inner.write_metadata(checkpoint_id, metadata)

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        self.discarded.append(checkpoint_id)
        self._inner.discard_checkpoint(checkpoint_id)

    def discard_shared(self, handle) -> None:
        self.discarded_shared.append(handle)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class Rig:
    """A coordinator with everything around it manual."""

    def __init__(
        self,
        *,
        interval: int = INTERVAL,
        timeout: int = TIMEOUT,
        min_pause: int = 0,
        concurrent: int = 1,
        tolerable: int = 0,
        retained: int = 1,
        first_id: int = 1,
    ) -> None:
        self.clock = ManualClock(0)
        self.timer = ManualScheduledExecutor(self.clock)
        self.io = ManualScheduledExecutor(self.clock)
        self.tasks = Tasks()
        self.storage = RecordingStorage()
        self.store = CompletedCheckpointStore(retained, self.storage)
        self.settings = CheckpointSettings(
            interval,
            CheckpointingMode.EXACTLY_ONCE,
            timeout,
            min_pause,
            concurrent,
            tolerable,
            retained,
            JobManagerCheckpointStorage(),
            ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS,
        )
        self.coordinator = CheckpointCoordinator(
            job_id=JOB,
            settings=self.settings,
            storage=self.storage,
            store=self.store,
            tasks=self.tasks,
            max_parallelism={1: 128, 2: 128},
            clock=self.clock,
            timer=self.timer,
            io=self.io,
            first_checkpoint_id=first_id,
        )

    def settle(self) -> None:
        """Run the mails of both threads that are due now, and those they lead to, until neither has any."""
        while self.timer.advance(0) + self.io.advance(0):
            pass

    def advance(self, millis: int) -> None:
        self.timer.advance(millis)
        self.settle()

    def trigger(self, **options):
        future = self.coordinator.trigger_checkpoint(**options)
        self.settle()
        return future

    def ack(self, checkpoint_id: int, task, states: dict | None = None) -> AckResult:
        result = self.coordinator.receive_acknowledge(task, checkpoint_id, states or {})
        self.settle()
        return result

    def ack_all(self, checkpoint_id: int, tasks=ALL) -> None:
        for task in tasks:
            assert self.ack(checkpoint_id, task) is AckResult.SUCCESS

    def decline(self, checkpoint_id: int, reason: Reason, task=MAPS[0]) -> None:
        self.coordinator.receive_decline(task, checkpoint_id, reason, "test")
        self.settle()

    @property
    def pending(self) -> list[int]:
        return sorted(self.coordinator._pending)

    def retained(self) -> list[int]:
        return [completed.checkpoint_id for completed in self.store.all()]


# -- triggering ---------------------------------------------------------------------------------------------------


def test_periodic_trigger_fires_every_interval_with_the_plan_of_the_tasks() -> None:
    rig = Rig()
    rig.coordinator.start()
    assert rig.timer.scheduled_delays() == [INTERVAL]
    rig.advance(INTERVAL - 1)
    assert rig.tasks.triggered == []
    rig.advance(1)
    assert rig.tasks.triggered == [(SOURCE, 1, None)], "only the sources are triggered"
    assert rig.pending == [1]
    assert rig.coordinator._pending[1].not_yet_acknowledged == set(ALL), "every subtask must acknowledge"
    rig.ack_all(1)
    rig.advance(INTERVAL)
    assert rig.tasks.triggered_ids() == [1, 2]


def test_without_an_interval_nothing_is_scheduled() -> None:
    rig = Rig(interval=0)
    rig.coordinator.start()
    assert rig.timer.scheduled_delays() == []


def test_tasks_not_running_consume_no_id_and_the_trigger_retries_soon() -> None:
    rig = Rig()
    rig.coordinator.start()
    rig.tasks.refusal = Reason.NOT_ALL_TASKS_RUNNING
    rig.advance(INTERVAL)
    assert rig.tasks.triggered == [] and rig.coordinator.next_checkpoint_id == 1
    assert rig.timer.scheduled_delays() == [RETRY_MS]
    rig.tasks.refusal = None
    rig.advance(RETRY_MS)
    assert rig.tasks.triggered == [(SOURCE, 1, None)]
    assert rig.tasks.failures == [], "tasks still starting are no checkpoint failure"


def test_a_refused_trigger_fails_its_future_naming_the_reason() -> None:
    rig = Rig()
    rig.tasks.refusal = Reason.NOT_ALL_TASKS_RUNNING
    future = rig.trigger()
    with pytest.raises(RuntimeError, match="not all tasks are running"):
        future.result(0)


def test_max_concurrent_holds_the_periodic_trigger_until_the_pending_one_is_announced() -> None:
    rig = Rig(concurrent=1)
    rig.coordinator.start()
    rig.advance(INTERVAL)
    rig.advance(INTERVAL)  # checkpoint 1 is still pending: the second tick waits
    assert rig.tasks.triggered_ids() == [1]
    assert rig.timer.scheduled_delays()[0] <= RETRY_MS
    for task in ALL:
        rig.coordinator.receive_acknowledge(task, 1, {})
    rig.io.run_all()  # `_metadata` written; the completion is a mail on the main thread, not yet run
    assert rig.tasks.triggered_ids() == [1], "a finalizing checkpoint still counts against max_concurrent"
    rig.settle()  # completed, tasks notified: the held trigger goes out at once
    assert rig.tasks.completed == [1]
    assert rig.tasks.triggered_ids() == [1, 2]


def test_two_concurrent_checkpoints_may_be_pending() -> None:
    rig = Rig(concurrent=2)
    rig.coordinator.start()
    rig.advance(INTERVAL)
    rig.advance(INTERVAL)
    rig.advance(INTERVAL)
    assert rig.pending == [1, 2]


def test_min_pause_counts_from_the_last_completion() -> None:
    rig = Rig(min_pause=250)
    rig.coordinator.start()
    rig.advance(INTERVAL)  # t=100: checkpoint 1
    rig.advance(20)
    rig.ack_all(1)  # t=120: completed
    rig.advance(INTERVAL - 20)  # t=200: the tick is due but the pause lasts until 370
    assert rig.tasks.triggered_ids() == [1]
    assert rig.timer.scheduled_delays() == [170]
    rig.advance(169)
    assert rig.tasks.triggered_ids() == [1]
    rig.advance(1)
    assert rig.tasks.triggered_ids() == [1, 2]


# -- completion ---------------------------------------------------------------------------------------------------


def test_completion_writes_metadata_off_the_main_thread_then_stores_then_notifies() -> None:
    rig = Rig()
    future = rig.trigger()
    for task in ALL:
        rig.coordinator.receive_acknowledge(task, 1, {})
    assert rig.storage.metadata_written == [] and rig.io.queued == 1, "the write is the I/O executor's"
    rig.io.run_all()
    assert rig.storage.metadata_written == [1] and rig.store.latest() is None
    rig.timer.run_all()  # back on the main thread: stored, announced on the I/O executor
    assert rig.store.latest().checkpoint_id == 1 and rig.tasks.completed == [] and not future.done()
    rig.io.run_all()
    assert rig.tasks.completed == [1]
    completed = future.result(0)
    assert completed.checkpoint_id == 1 and not completed.is_savepoint
    assert completed.metadata_location.endswith("chk-1")


def test_acks_are_answered_with_what_happened() -> None:
    rig = Rig(first_id=5)
    rig.trigger()
    assert rig.ack(5, SOURCE) is AckResult.SUCCESS
    assert rig.ack(5, SOURCE) is AckResult.DUPLICATE
    assert rig.ack(5, (9, 0)) is AckResult.UNKNOWN
    assert rig.ack(6, SOURCE) is AckResult.UNKNOWN, "an id never triggered"
    rig.decline(5, Reason.DECLINED_TASK_NOT_READY)
    assert rig.ack(5, MAPS[0]) is AckResult.DISCARDED, "an ack for an aborted checkpoint"
    assert rig.storage.discarded.count(5) == 2, "abort and the late ack both discard what was written"


def test_ids_continue_from_the_restored_checkpoint() -> None:
    rig = Rig(first_id=8)
    assert rig.coordinator.next_checkpoint_id == 8
    rig.trigger()
    assert rig.tasks.triggered == [(SOURCE, 8, None)]
    assert rig.coordinator.next_checkpoint_id == 9


def test_a_newer_completed_checkpoint_subsumes_older_pending_ones_without_counting_a_failure() -> None:
    rig = Rig(concurrent=2, tolerable=0)
    first = rig.trigger()
    rig.trigger()
    rig.ack_all(2)
    assert rig.pending == [] and rig.tasks.aborted == [1] and rig.tasks.completed == [2]
    with pytest.raises(RuntimeError, match="a newer checkpoint completed first"):
        first.result(0)
    assert rig.tasks.failures == [] and rig.coordinator.latest_completed().checkpoint_id == 2
    assert rig.ack(1, SOURCE) is AckResult.DISCARDED


def test_a_completing_checkpoint_does_not_subsume_a_pending_savepoint(tmp_path) -> None:
    rig = Rig(concurrent=2)
    savepoint = rig.trigger(
        is_savepoint=True, savepoint_storage=RecordingStorage("savepoint"), savepoint_dir=str(tmp_path)
    )
    rig.trigger()
    rig.ack_all(2)
    assert rig.pending == [1]
    rig.ack_all(1)
    assert savepoint.result(0).is_savepoint


def test_retained_checkpoints_are_bounded_and_the_subsumed_are_discarded() -> None:
    rig = Rig(retained=2)
    for checkpoint_id in (1, 2, 3):
        rig.trigger()
        rig.ack_all(checkpoint_id)
    assert rig.retained() == [2, 3]
    assert 1 in rig.storage.discarded


# -- failures -----------------------------------------------------------------------------------------------------


def test_timeout_aborts_discards_notifies_and_counts() -> None:
    rig = Rig(tolerable=1)
    future = rig.trigger()
    rig.ack(1, SOURCE)
    rig.advance(TIMEOUT - 1)
    assert rig.pending == [1]
    rig.advance(1)
    assert rig.pending == [] and rig.tasks.aborted == [1] and rig.storage.discarded == [1]
    with pytest.raises(RuntimeError, match="expired after 1000 ms"):
        future.result(0)
    assert rig.tasks.failures == [], "one failure is tolerated"
    rig.trigger()
    rig.advance(TIMEOUT)
    assert len(rig.tasks.failures) == 1 and isinstance(rig.tasks.failures[0], CheckpointFailuresExceededError)


def test_a_completed_checkpoint_cancels_its_timeout() -> None:
    rig = Rig()
    rig.trigger()
    rig.ack_all(1)
    assert rig.timer.scheduled_delays() == []
    rig.advance(TIMEOUT * 2)
    assert rig.tasks.aborted == [] and rig.tasks.failures == []


# Flink's rule, written out rather than read from the enum: what says something about checkpointing counts; a task
# that was not ready, was closing, had ended or saw a newer barrier says nothing about it.
COUNTING = {
    Reason.DECLINED: True,
    Reason.ASYNC_ERROR: True,
    Reason.IO_ERROR: True,
    Reason.DECLINED_TASK_NOT_READY: False,
    Reason.DECLINED_TASK_CLOSING: False,
    Reason.DECLINED_END_OF_INPUT: False,
    Reason.DECLINED_SUBSUMED: False,
    Reason.TASK_FAILURE: False,
}


@pytest.mark.parametrize("reason, counts", COUNTING.items(), ids=[r.name for r in COUNTING])
def test_which_declines_count_against_the_tolerable_failures(reason: Reason, counts: bool) -> None:
    rig = Rig(tolerable=0)
    future = rig.trigger()
    rig.decline(1, reason)
    assert rig.pending == [] and rig.tasks.aborted == [1]
    with pytest.raises(RuntimeError, match=reason.value):
        future.result(0)
    assert len(rig.tasks.failures) == (1 if counts else 0)


def test_a_success_resets_the_failure_count() -> None:
    rig = Rig(tolerable=1)
    for checkpoint_id in (1, 3):
        rig.trigger()
        rig.decline(checkpoint_id, Reason.ASYNC_ERROR)
        rig.trigger()
        rig.ack_all(checkpoint_id + 1)
    assert rig.tasks.failures == []
    rig.trigger()
    rig.decline(5, Reason.ASYNC_ERROR)
    rig.trigger()
    rig.decline(6, Reason.ASYNC_ERROR)
    assert len(rig.tasks.failures) == 1


def test_a_decline_for_a_checkpoint_that_already_ended_changes_nothing() -> None:
    rig = Rig()
    rig.trigger()
    rig.ack_all(1)
    rig.decline(1, Reason.ASYNC_ERROR)
    rig.decline(42, Reason.ASYNC_ERROR)
    assert rig.tasks.aborted == [] and rig.tasks.failures == [] and rig.coordinator.stats.failed == 0


def test_a_failing_metadata_write_fails_only_that_checkpoint() -> None:
    rig = Rig(tolerable=0)
    rig.coordinator.start()
    rig.storage.fail_metadata = OSError("disk full")
    rig.advance(INTERVAL)
    for task in ALL:
        rig.ack(1, task)
    assert rig.store.latest() is None and rig.tasks.completed == [] and rig.tasks.aborted == [1]
    assert rig.storage.discarded == [1]
    assert len(rig.tasks.failures) == 1, "an I/O error counts"
    rig.advance(INTERVAL)
    assert rig.tasks.triggered_ids() == [1, 2], "the failed finalization no longer blocks the next trigger"
    rig.ack_all(2)
    assert rig.store.latest().checkpoint_id == 2


def test_abort_pending_awaiting_a_finished_task_does_not_count() -> None:
    rig = Rig(concurrent=2, tolerable=0)
    rig.trigger()
    rig.trigger()
    rig.ack(2, MAPS[1])
    rig.ack(1, MAPS[1])
    rig.coordinator.abort_pending_awaiting(MAPS[0])
    rig.settle()
    assert rig.pending == [] and sorted(rig.tasks.aborted) == [1, 2] and rig.tasks.failures == []
    rig.trigger()
    rig.ack(3, MAPS[0])
    rig.coordinator.abort_pending_awaiting(MAPS[0])
    assert rig.pending == [3], "a checkpoint the task already acknowledged goes on"


def test_stop_ends_periodic_triggers_and_refuses_new_ones() -> None:
    rig = Rig()
    rig.coordinator.start()
    rig.advance(INTERVAL)
    rig.coordinator.stop()
    rig.coordinator.abort_all_pending(Reason.COORDINATOR_SHUTDOWN)
    rig.settle()
    assert rig.pending == [] and rig.tasks.aborted == [1] and rig.tasks.failures == []
    assert rig.timer.scheduled_delays() == []
    with pytest.raises(RuntimeError, match="shut down"):
        rig.trigger().result(0)
    rig.advance(INTERVAL * 5)
    assert rig.tasks.triggered_ids() == [1]


def test_an_abort_releases_shared_state_only_that_checkpoint_used() -> None:
    rig = Rig()
    rig.trigger()
    handle = rig.storage.write_shared("sst-1", b"shared bytes")
    rig.ack(1, SOURCE, {"op": SubtaskState(shared=[handle])})
    rig.decline(1, Reason.DECLINED_TASK_CLOSING)
    assert rig.storage.discarded_shared == [handle]


# -- savepoints ---------------------------------------------------------------------------------------------------


def test_a_savepoint_goes_to_its_directory_and_storage_and_is_not_retained(tmp_path) -> None:
    rig = Rig()
    savepoint_storage = RecordingStorage("savepoint")
    future = rig.trigger(is_savepoint=True, savepoint_storage=savepoint_storage, savepoint_dir=str(tmp_path))
    assert rig.tasks.triggered == [(SOURCE, 1, str(tmp_path))]
    rig.ack_all(1)
    completed = future.result(0)
    assert completed.is_savepoint and savepoint_storage.metadata_written == [1]
    assert rig.storage.metadata_written == [] and rig.store.latest() is None
    assert rig.tasks.completed == [1], "tasks hear of a savepoint too (sinks commit what it covers)"


def test_a_savepoint_refused_for_tasks_not_running_is_not_retried() -> None:
    rig = Rig()
    rig.tasks.refusal = Reason.NOT_ALL_TASKS_RUNNING
    future = rig.trigger(is_savepoint=True, savepoint_dir="/tmp/nowhere")
    with pytest.raises(RuntimeError, match="savepoint of job .* not triggered"):
        future.result(0)
    assert rig.timer.scheduled_delays() == []


def test_savepoint_failures_count_only_when_a_task_reports_them() -> None:
    rig = Rig(tolerable=0)
    rig.trigger(is_savepoint=True, savepoint_dir="/tmp/x")
    rig.advance(TIMEOUT)  # the coordinator's own timeout: a user retries a savepoint by hand
    assert rig.tasks.failures == []
    rig.trigger(is_savepoint=True, savepoint_dir="/tmp/x")
    rig.decline(2, Reason.ASYNC_ERROR)
    assert len(rig.tasks.failures) == 1


# -- statistics and logs ------------------------------------------------------------------------------------------


def test_stats_count_outcomes_with_duration_and_size() -> None:
    rig = Rig(concurrent=2)
    rig.trigger()
    rig.advance(30)
    data = rig.storage.write_state(1, "op-0-keyed", b"x" * 100)
    rig.ack(1, SOURCE, {"op": SubtaskState(keyed=[data])})
    rig.ack(1, MAPS[0])
    rig.ack(1, MAPS[1])
    rig.trigger()
    rig.decline(2, Reason.ASYNC_ERROR)
    stats = rig.coordinator.stats
    assert (stats.triggered, stats.completed, stats.failed) == (2, 1, 1)
    assert stats.last_completed.checkpoint_id == 1
    assert stats.last_duration_ms == 30 and stats.last_size_bytes == 100
    assert "declined it" in stats.last_failure
    assert [(h["id"], h["status"], h["state_size"]) for h in stats.history] == [(1, "COMPLETED", 100), (2, "FAILED", 0)]


def test_the_history_sums_up_the_subtasks_alignment_and_in_flight_data() -> None:
    from fluvial.runtime.checkpointing import CheckpointMetricsReport

    rig = Rig()
    rig.trigger()
    rig.coordinator.receive_acknowledge(SOURCE, 1, {}, CheckpointMetricsReport())
    rig.coordinator.receive_acknowledge(MAPS[0], 1, {}, CheckpointMetricsReport(40, 1000, unaligned=True))
    rig.coordinator.receive_acknowledge(MAPS[1], 1, {}, CheckpointMetricsReport(70, 500, unaligned=True))
    rig.settle()
    rig.advance(1000)
    rig.trigger()
    for task in ALL:
        rig.coordinator.receive_acknowledge(task, 2, {}, CheckpointMetricsReport(15))
    rig.settle()
    first, second = rig.coordinator.stats.history
    assert (first["checkpoint_type"], first["persisted_data"], first["alignment_duration"]) == (
        "UNALIGNED_CHECKPOINT",
        1500,
        70,
    )
    assert (second["checkpoint_type"], second["persisted_data"], second["alignment_duration"]) == ("CHECKPOINT", 0, 15)


def test_history_keeps_only_the_newest_entries() -> None:
    rig = Rig()
    for checkpoint_id in range(1, CheckpointCoordinator.HISTORY_SIZE + 6):
        rig.trigger()
        rig.decline(checkpoint_id, Reason.DECLINED_TASK_NOT_READY)
    history = rig.coordinator.stats.history
    assert len(history) == CheckpointCoordinator.HISTORY_SIZE
    assert history[-1]["id"] == CheckpointCoordinator.HISTORY_SIZE + 5


def test_decisions_are_logged(caplog) -> None:
    caplog.set_level(logging.INFO, logger="fluvial.checkpoint.coordinator")
    rig = Rig(tolerable=5)
    rig.coordinator.start()
    rig.advance(INTERVAL)
    rig.advance(7)
    rig.ack_all(1)
    rig.trigger()
    rig.advance(TIMEOUT)
    text = caplog.text
    assert "every 100 ms" in text
    assert f"triggering checkpoint 1 of job {JOB}" in text
    assert f"completed checkpoint 1 of job {JOB} in 7 ms (0 bytes)" in text
    assert f"checkpoint 2 of job {JOB} aborted (TIMEOUT) after 1000 ms" in text
    assert "counts as failed (1 in a row, 5 tolerated)" in text


# -- no order of events completes a checkpoint twice or leaves one pending -----------------------------------------


EVENTS = st.one_of(
    st.tuples(st.just("ack"), st.integers(0, 2), st.integers(0, 3)),  # (kind, task, which checkpoint: 0 = newest)
    st.tuples(st.just("ack_all"), st.just(0), st.integers(0, 1)),
    st.tuples(st.just("ack_all"), st.just(0), st.just(0)),  # twice: complete checkpoints often enough
    st.tuples(st.just("decline"), st.sampled_from(list(COUNTING)), st.integers(0, 3)),
    st.tuples(st.just("time"), st.integers(1, 250), st.just(0)),
    st.tuples(st.just("trigger"), st.just(0), st.just(0)),
    st.tuples(st.just("io"), st.just(0), st.just(0)),  # the I/O thread runs what it was handed
    st.tuples(st.just("main"), st.just(0), st.just(0)),  # the main thread runs what it was handed
)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(EVENTS, max_size=40), concurrent=st.integers(1, 3), tolerable=st.integers(0, 2))
def test_no_order_of_events_completes_a_checkpoint_twice_or_leaves_one_pending(events, concurrent, tolerable) -> None:
    """Any interleaving of answers, time and the two threads' mails, under the one order the protocol keeps: each
    subtask answers checkpoints in id order (its barriers arrive in order and its answers leave one I/O thread in
    order), so no subtask answers n after it answered m > n. (The coordinator relies on it: a checkpoint completing
    while an older one is still writing its `_metadata` would be stored out of order.)"""
    rig = Rig(concurrent=concurrent, tolerable=tolerable, retained=2)
    rig.coordinator.start()
    futures = []
    answered = dict.fromkeys(ALL, 0)  # the newest checkpoint each subtask answered

    def answer(task, checkpoint_id: int | None, respond) -> None:
        if checkpoint_id is None:
            respond(task, coordinator.next_checkpoint_id)  # a stray answer for a checkpoint never triggered
        elif checkpoint_id >= answered[task]:
            answered[task] = checkpoint_id
            respond(task, checkpoint_id)

    coordinator = rig.coordinator
    for kind, a, b in events:
        triggered = rig.tasks.triggered_ids()
        checkpoint_id = triggered[-1 - b] if b < len(triggered) else None
        if kind in ("ack", "ack_all"):
            for task in ALL if kind == "ack_all" else [ALL[a]]:
                answer(task, checkpoint_id, lambda t, c: coordinator.receive_acknowledge(t, c, {}))
        elif kind == "decline":
            answer(ALL[0], checkpoint_id, lambda t, c, a=a: coordinator.receive_decline(t, c, a, ""))
        elif kind == "time":
            rig.timer.advance(a)
        elif kind == "trigger":
            futures.append(coordinator.trigger_checkpoint())
        elif kind == "io":
            rig.io.run_all()
        else:
            rig.timer.run_all()
    coordinator.stop()
    rig.advance(TIMEOUT)  # whatever is still pending times out
    completed, aborted = rig.tasks.completed, rig.tasks.aborted
    assert rig.pending == [] and not coordinator._finalizing
    assert len(completed) == len(set(completed)), f"completed twice: {completed}"
    assert not set(completed) & set(aborted), f"both completed and aborted: {set(completed) & set(aborted)}"
    assert set(completed) | set(aborted) == set(rig.tasks.triggered_ids()), "every checkpoint ended one way"
    stored = rig.retained()
    assert stored == sorted(stored) and len(stored) == len(set(stored))
    assert all(future.done() for future in futures)
