"""The REST API's JSON documents, built from plain data: Flink's field names and meanings."""

from __future__ import annotations

import pytest

from fluvial.cluster.exception_history import ExceptionEntry
from fluvial.cluster.job_details import (
    CheckpointDetails,
    EdgeDetails,
    JobDetails,
    SubtaskDetails,
    VertexDetails,
)
from fluvial.cluster.local_dispatcher import JobView
from fluvial.common.job_status import JobStatus
from fluvial.metrics.snapshot import TaskMetricsSnapshot, vertex_hex_id
from fluvial.runtime.execution_state import ExecutionState as S
from fluvial.web import views

JOB = "c" * 32


def _vertex(vertex_id: int, name: str, parallelism: int, attempt: int = 0) -> VertexDetails:
    subtasks = [SubtaskDetails(i, attempt, S.RUNNING, 0, i, 1_000, -1) for i in range(parallelism)]
    return VertexDetails(
        vertex_id,
        name,
        [f"node-{vertex_id}"],
        name.split(" -> "),
        parallelism,
        128,
        "default",
        None,
        vertex_id == 1,
        subtasks,
    )


def _task(vertex_id: int, index: int, attempt: int = 0, **task: float) -> TaskMetricsSnapshot:
    return TaskMetricsSnapshot(
        JOB,
        "job",
        vertex_id,
        "t",
        index,
        attempt,
        "tm-0",
        "h",
        2_000,
        task=task,
        operators={f"node-{vertex_id}": {"numRecordsIn": task.get("numRecordsIn", 0)}},
        operator_names={f"node-{vertex_id}": "Op"},
    )


def _view(
    tasks: list[TaskMetricsSnapshot], history: list[dict] | None = None, exceptions: list[ExceptionEntry] | None = None
) -> JobView:
    vertices = [_vertex(1, "Source: numbers -> Map", 1), _vertex(2, "Sum", 2)]
    edges = [EdgeDetails(1, 2, "HASH", "ALL_TO_ALL", 0, None)]
    checkpoints = CheckpointDetails(
        True, triggered=3, completed=2, failed=1, history=history or [], settings={"interval": 100}
    )
    details = JobDetails(
        JOB,
        "job",
        JobStatus.RUNNING,
        {"CREATED": 900, "RUNNING": 950},
        vertices,
        edges,
        checkpoints,
        exceptions or [],
        0,
        3_000,
        950,
    )
    return JobView(details, tasks, ["tm-0"])


def test_job_details_sum_each_vertexs_subtasks_and_name_vertices_by_their_chain():
    view = _view(
        [_task(1, 0, numRecordsOut=10), _task(2, 0, numRecordsIn=4, numBytesIn=100), _task(2, 1, numRecordsIn=6)]
    )
    document = views.job_json(view)
    assert {"jid", "name", "state", "start-time", "duration", "vertices", "plan"} <= set(document)
    source, total = document["vertices"]
    assert source["name"] == "Source: numbers -> Map" and source["operators"] == ["Source: numbers", "Map"]
    assert source["id"] == vertex_hex_id(JOB, 1) and len(source["id"]) == 32
    assert total["metrics"]["read-records"] == 10 and total["metrics"]["read-bytes"] == 100
    assert source["metrics"]["write-records"] == 10 and total["status"] == "RUNNING"
    assert document["plan"]["nodes"][1]["inputs"][0]["ship_strategy"] == "HASH"


def test_an_earlier_attempts_figures_are_not_shown_for_the_current_one():
    view = _view([_task(2, 0, attempt=0, numRecordsIn=99)])
    view.details.vertices[1].subtasks[0].attempt = 1
    subtask = views.vertex_json(view, view.details.vertices[1])["subtasks"][0]
    assert subtask["attempt"] == 1 and subtask["metrics"]["read-records"] == 0


@pytest.mark.parametrize(
    "per_second, level", [(0.0, "ok"), (100.0, "ok"), (101.0, "low"), (500.0, "low"), (501.0, "high")]
)
def test_back_pressure_levels_are_flinks(per_second, level):
    view = _view([_task(2, 0, backPressuredTimeMsPerSecond=per_second, busyTimeMsPerSecond=200.0), _task(2, 1)])
    document = views.backpressure_json(view, view.details.vertices[1])
    assert document["backpressure-level"] == level, "the vertex shows its worst subtask"
    assert document["subtasks"][0]["backpressure-level"] == level and document["subtasks"][0]["busyRatio"] == 0.2
    assert document["subtasks"][1]["backpressure-level"] == "ok"


def test_watermarks_are_the_subtasks_input_watermarks_as_metrics():
    view = _view([_task(2, 0, currentInputWatermark=1234), _task(2, 1)])
    assert views.watermarks_json(view, view.details.vertices[1]) == [
        {"id": "0.currentInputWatermark", "value": "1234"},
        {"id": "1.currentInputWatermark", "value": str(-(2**63))},
    ]


def test_checkpoints_list_counts_latest_and_history_newest_first():
    history = [
        {
            "id": 1,
            "status": "COMPLETED",
            "is_savepoint": False,
            "trigger_timestamp": 10,
            "end_to_end_duration": 5,
            "state_size": 100,
            "external_path": "/cp/chk-1",
        },
        {
            "id": 2,
            "status": "FAILED",
            "is_savepoint": False,
            "trigger_timestamp": 20,
            "end_to_end_duration": 7,
            "state_size": 0,
            "failure_message": "it expired",
        },
        {
            "id": 3,
            "status": "COMPLETED",
            "is_savepoint": True,
            "trigger_timestamp": 30,
            "end_to_end_duration": 9,
            "state_size": 300,
            "external_path": "/sp/savepoint-3",
        },
    ]
    document = views.checkpoints_json(_view([], history).details)
    assert document["counts"] == {
        "restored": 0,
        "total": 3,
        "triggered": 3,
        "in_progress": 0,
        "completed": 2,
        "failed": 1,
    }
    assert [entry["id"] for entry in document["history"]] == [3, 2, 1]
    latest = document["latest"]
    assert latest["completed"]["external_path"] == "/cp/chk-1" and latest["savepoint"]["id"] == 3
    assert latest["failed"]["failure_message"] == "it expired" and latest["failed"]["failure_timestamp"] == 27
    assert document["summary"]["state_size"] == {"min": 100, "max": 300, "avg": 200}


def test_unaligned_checkpoints_show_their_type_in_flight_bytes_and_alignment_by_flinks_names():
    history = [
        {
            "id": 1,
            "status": "COMPLETED",
            "is_savepoint": False,
            "trigger_timestamp": 10,
            "end_to_end_duration": 5,
            "state_size": 100,
            "checkpoint_type": "UNALIGNED_CHECKPOINT",
            "persisted_data": 4096,
            "alignment_duration": 0,
        },
        {
            "id": 2,
            "status": "COMPLETED",
            "is_savepoint": False,
            "trigger_timestamp": 20,
            "end_to_end_duration": 9,
            "state_size": 100,
            "checkpoint_type": "CHECKPOINT",
            "persisted_data": 0,
            "alignment_duration": 700,
        },
    ]
    document = views.checkpoints_json(_view([], history).details)
    by_id = {entry["id"]: entry for entry in document["history"]}
    assert by_id[1]["checkpoint_type"] == "UNALIGNED_CHECKPOINT" and by_id[1]["persisted_data"] == 4096
    assert by_id[2]["checkpoint_type"] == "CHECKPOINT" and by_id[2]["alignment_duration"] == 700
    assert document["summary"]["persisted_data"] == {"min": 0, "max": 4096, "avg": 2048}


def test_exceptions_show_the_newest_root_cause_first_with_its_task():
    entries = [
        ExceptionEntry("ValueError", "old", "trace 1", 10, "Map (1/2)", "Map"),
        ExceptionEntry("KeyError", "new", "trace 2", 20, None, None),
    ]
    document = views.exceptions_json(_view([], exceptions=entries).details, max_exceptions=1)
    assert document["root-exception"] == "trace 2" and document["timestamp"] == 20
    assert [e["exceptionName"] for e in document["exceptionHistory"]["entries"]] == ["KeyError"]
    assert document["exceptionHistory"]["truncated"] is True


def test_metric_lists_give_ids_or_the_values_asked_for():
    values = {"uptime": 1500.0, "numRestarts": 0}
    assert views.metric_list_json(values, None) == [{"id": "uptime"}, {"id": "numRestarts"}]
    assert views.metric_list_json(values, "numRestarts, nope") == [{"id": "numRestarts", "value": "0"}]
