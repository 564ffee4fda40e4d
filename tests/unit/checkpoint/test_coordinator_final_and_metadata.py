"""CheckpointCoordinator, stepped by hand (ManualScheduledExecutor for its thread and its I/O): a failing
`_metadata` write in the middle of a run (the soak found it killing the JobMaster), an intermediate savepoint
that completes, and a final checkpoint requested (FLIP-147). The coordinator's other rules: test_coordinator.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from fluvial.checkpoint.coordinator import CheckpointCoordinator
from fluvial.checkpoint.plan import CheckpointPlan
from fluvial.checkpoint.store import CompletedCheckpointStore
from fluvial.testing import ManualScheduledExecutor


@dataclass
class Settings:
    interval_ms: int = 100
    timeout_ms: int = 10_000
    min_pause_ms: int = 0
    max_concurrent: int = 1
    tolerable_failures: int = 5


@dataclass
class Tasks:
    triggered: list[int] = field(default_factory=list)
    completed: list[int] = field(default_factory=list)
    aborted: list[int] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)

    def checkpoint_plan(self):
        return CheckpointPlan([(1, 0)], {(1, 0)})

    def trigger(self, task, checkpoint_id, timestamp, savepoint_dir, stop=None):
        self.triggered.append(checkpoint_id)

    def notify_complete(self, checkpoint_id):
        self.completed.append(checkpoint_id)

    def notify_aborted(self, checkpoint_id):
        self.aborted.append(checkpoint_id)

    def fail_job(self, error):
        self.failures.append(error)


class Storage:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def write_metadata(self, checkpoint_id, metadata):
        if self.fail:
            raise OSError(28, "No space left on device")
        return f"memory://chk-{checkpoint_id}"

    def discard_checkpoint(self, checkpoint_id):
        pass

    def discard_shared(self, handle):
        pass


def coordinator(storage: Storage) -> tuple[CheckpointCoordinator, Tasks, ManualScheduledExecutor]:
    tasks, timer = Tasks(), ManualScheduledExecutor()
    return (
        CheckpointCoordinator(
            job_id="job",
            settings=Settings(),
            storage=storage,
            store=CompletedCheckpointStore(1, storage),
            tasks=tasks,
            max_parallelism={1: 128},
            clock=timer.clock,
            timer=timer,
            io=timer,
        ),
        tasks,
        timer,
    )


def test_a_metadata_write_that_fails_aborts_the_checkpoint_and_the_coordinator_goes_on():
    checkpoints, tasks, timer = coordinator(Storage(fail=True))
    future = checkpoints.trigger_checkpoint()
    checkpoints.receive_acknowledge((1, 0), 1, {})
    timer.run_all()
    assert isinstance(future.exception(timeout=0), OSError)
    assert tasks.aborted == [1] and tasks.completed == [] and checkpoints.latest_completed() is None
    checkpoints.storage.fail = False
    checkpoints.trigger_checkpoint()
    checkpoints.receive_acknowledge((1, 0), 2, {})
    timer.run_all()
    assert tasks.completed == [2], "the coordinator did not go on after the failed write"


def test_an_intermediate_savepoint_completes_without_telling_the_tasks():
    checkpoints, tasks, timer = coordinator(Storage())
    future = checkpoints.trigger_checkpoint(is_savepoint=True, notify_tasks=False)
    checkpoints.receive_acknowledge((1, 0), 1, {})
    timer.run_all()
    assert future.result(timeout=0).checkpoint_id == 1 and tasks.completed == []
    checkpoints.trigger_checkpoint(is_savepoint=True)
    checkpoints.receive_acknowledge((1, 0), 2, {})
    timer.run_all()
    assert tasks.completed == [2]


def test_a_requested_checkpoint_is_triggered_without_waiting_for_the_interval():
    checkpoints, tasks, timer = coordinator(Storage())
    checkpoints.start()
    assert tasks.triggered == []
    checkpoints.request_checkpoint()
    timer.advance(0)
    assert tasks.triggered == [1]
