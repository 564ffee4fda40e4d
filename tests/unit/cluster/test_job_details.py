"""What a JobMaster tells about its job: vertex states from subtask states, the job's timeline, its own
metrics, and the exception history."""

from __future__ import annotations

import pytest

from fluvial.cluster.exception_history import ExceptionHistory, entry_of
from fluvial.cluster.job_details import CheckpointDetails, JobDetails, aggregate_state
from fluvial.cluster.job_timeline import JobTimeline
from fluvial.common.job_status import JobStatus
from fluvial.runtime.execution_state import ExecutionState as S


@pytest.mark.parametrize(
    "states, expected",
    [
        ([S.RUNNING, S.RUNNING], S.RUNNING),
        ([S.FINISHED, S.FINISHED], S.FINISHED),
        ([S.FINISHED, S.RUNNING], S.RUNNING),
        ([S.RUNNING, S.FAILED, S.CANCELING], S.FAILED),
        ([S.CANCELED, S.CANCELING], S.CANCELING),
        ([S.DEPLOYING, S.RUNNING], S.RUNNING),
        ([S.CREATED, S.DEPLOYING], S.DEPLOYING),
        ([], S.CREATED),
    ],
)
def test_a_vertex_state_follows_flinks_aggregation(states, expected):
    assert aggregate_state(states) is expected


def test_the_timeline_keeps_first_entries_and_each_attempts_own_times():
    timeline = JobTimeline()
    timeline.job_status(JobStatus.RUNNING)
    first_running = timeline.status_timestamps["RUNNING"]
    timeline.task_state(1, 0, 0, S.RUNNING)
    timeline.task_state(1, 0, 0, S.FAILED)
    _, start, end = timeline.subtasks[(1, 0)]
    assert 0 < start <= end
    timeline.task_state(1, 0, 1, S.DEPLOYING)
    assert timeline.subtasks[(1, 0)] == (1, -1, -1), "a new attempt has not started yet"
    timeline.task_state(1, 0, 0, S.CANCELED)
    assert timeline.subtasks[(1, 0)] == (1, -1, -1), "a late report of an old attempt changes nothing"
    timeline.job_status(JobStatus.RESTARTING)
    timeline.job_status(JobStatus.RUNNING)
    assert timeline.status_timestamps["RUNNING"] == first_running and timeline.running_since >= first_running


def _details(status: JobStatus, running_since: int = 1_000) -> JobDetails:
    checkpoints = CheckpointDetails(
        enabled=True, triggered=5, completed=3, failed=1, last_duration_ms=12, last_size_bytes=2048
    )
    return JobDetails(
        "j" * 32, "job", status, {"CREATED": 900, status.name: 1_000}, [], [], checkpoints, [], 2, 5_000, running_since
    )


def test_the_jobs_own_metrics_have_flinks_names_and_meanings():
    values = _details(JobStatus.RUNNING).metric_values(now=4_000)
    assert values["uptime"] == 3_000 and values["numRestarts"] == 2
    assert (
        values["numberOfCompletedCheckpoints"],
        values["numberOfFailedCheckpoints"],
        values["numberOfInProgressCheckpoints"],
        values["totalNumberOfCheckpoints"],
    ) == (3, 1, 1, 5)
    assert (values["lastCheckpointDuration"], values["lastCheckpointSize"]) == (12, 2048)
    assert _details(JobStatus.RESTARTING).metric_values(now=4_000)["uptime"] == 0, "not running: no uptime"
    assert _details(JobStatus.FINISHED).metric_values(now=4_000)["uptime"] == -1, "ended: -1, as in Flink"


def test_the_exception_history_keeps_root_causes_and_what_came_with_them():
    history = ExceptionHistory(size=2)
    first = ValueError("bad record")
    history.add_root(first, entry_of(first, "Map (1/2)", "Map"))
    history.add_root(first, entry_of(first))
    assert len(history.entries) == 1, "the same failure reported twice is one entry"
    history.add_concurrent(entry_of(RuntimeError("cancelled with it"), "Map (2/2)"))
    assert [e.exception_name for e in history.entries[0].concurrent] == ["RuntimeError"]
    for message in ("second", "third"):
        error = KeyError(message)
        history.add_root(error, entry_of(error))
    assert [e.message for e in history.entries] == ["'second'", "'third'"], "bounded, newest last"
    assert "KeyError" in history.entries[-1].stacktrace
