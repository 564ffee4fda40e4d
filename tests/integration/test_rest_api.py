"""The REST API against running jobs: every route with Flink's field names, the access token on every
mutating route (401 without it), and GET routes that never change anything."""

from __future__ import annotations

import os
import time

import cloudpickle
import pytest

from fluvial.common import Configuration
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.metrics.prometheus import sanitize
from fluvial.testing import environment, execution_modes, wait_until
from tests.integration.rest_client import Discard, ServedJob, http, serve_job

RECORDS = 200


@pytest.fixture(scope="module", params=execution_modes(), ids=lambda mode: mode.value)
def job(request, tmp_path_factory):
    """A job that failed once and restarted, took one savepoint, read its records and now waits."""
    directory = str(tmp_path_factory.mktemp("rest"))
    served = serve_job(request.param, directory, "rest api job", records=RECORDS, crash_first=True)
    served.client.trigger_savepoint(os.path.join(directory, "first-savepoint")).result(30)
    wait_until(
        lambda: _vertex_records(served, 0, "write-records") == RECORDS,
        timeout=30,
        what="the source's records in the job details",
    )
    yield served
    served.stop()


def _vertex_records(job: ServedJob, index: int, field: str) -> int:
    return job.get(f"jobs/{job.job_id}").body["vertices"][index]["metrics"][field]


def _vertex_ids(job: ServedJob) -> list[str]:
    return [vertex["id"] for vertex in job.get(f"jobs/{job.job_id}").body["vertices"]]


# -- reading ------------------------------------------------------------------------------------------------------


def test_overview_jobs_and_taskmanagers(job):
    overview = job.get("overview")
    assert overview.status == 200
    assert overview.body["jobs-running"] == 1 and overview.body["taskmanagers"] >= 1
    assert overview.body["slots-total"] >= 2 and 0 <= overview.body["slots-available"] <= overview.body["slots-total"]
    assert {"jobs-finished", "jobs-cancelled", "jobs-failed", "flink-version"} <= set(overview.body)
    assert job.get("jobs").body == {"jobs": [{"id": job.job_id, "status": "RUNNING"}]}
    (entry,) = job.get("jobs/overview").body["jobs"]
    assert entry["jid"] == job.job_id and entry["name"] == "rest api job" and entry["state"] == "RUNNING"
    assert entry["tasks"]["total"] == 5 and entry["tasks"]["running"] == 5 and entry["start-time"] > 0
    managers = job.get("taskmanagers").body["taskmanagers"]
    assert managers and {"id", "slotsNumber", "freeSlots", "hardware"} <= set(managers[0])
    assert sum(m["slotsNumber"] - m["freeSlots"] for m in managers) == 2, "the job holds two slots"


def test_job_details_name_vertices_by_their_chains_with_records(job):
    details = job.get(f"jobs/{job.job_id}").body
    assert details["jid"] == job.job_id and details["name"] == "rest api job" and details["state"] == "RUNNING"
    assert details["duration"] > 0 and details["timestamps"]["RUNNING"] >= details["start-time"] > 0
    names = [vertex["name"] for vertex in details["vertices"]]
    assert names == ["Source: numbers", "double", "sum -> discard"]
    source, double, total = details["vertices"]
    assert [v["parallelism"] for v in details["vertices"]] == [1, 2, 2]
    assert source["metrics"]["write-records"] == RECORDS and double["metrics"]["read-records"] == RECORDS
    wait_until(lambda: _vertex_records(job, 2, "read-records") == RECORDS, timeout=10, what="the reduce's input")
    assert total["operators"] == ["sum", "discard"] and total["slotSharingGroup"] == "default"
    assert {v["status"] for v in details["vertices"]} == {"RUNNING"}
    assert details["plan"]["nodes"][2]["inputs"][0]["ship_strategy"] == "HASH"
    plan = job.get(f"jobs/{job.job_id}/plan").body["plan"]
    assert [node["description"] for node in plan["nodes"]] == names
    assert plan["nodes"][1]["inputs"][0] == {
        "num": 0,
        "id": source["id"],
        "ship_strategy": "REBALANCE",
        "exchange": "pipelined_bounded",
        "distribution_pattern": "ALL_TO_ALL",
        "side_output": None,
    }


def test_a_vertex_lists_its_subtasks_with_attempt_taskmanager_and_records(job):
    source_id, double_id, _ = _vertex_ids(job)
    vertex = job.get(f"jobs/{job.job_id}/vertices/{double_id}").body
    assert vertex["name"] == "double" and vertex["parallelism"] == 2 and len(vertex["subtasks"]) == 2
    managers = {m["id"] for m in job.get("taskmanagers").body["taskmanagers"]}
    for subtask in vertex["subtasks"]:
        assert subtask["status"] == "RUNNING" and subtask["attempt"] == 1, "the restart made attempt 1"
        assert subtask["taskmanager-id"] in managers
    assert sum(s["metrics"]["read-records"] for s in vertex["subtasks"]) == RECORDS
    assert sum(s["metrics"]["write-records"] for s in vertex["subtasks"]) == RECORDS
    assert job.get(f"jobs/{job.job_id}/vertices/1").body["id"] == source_id, "a vertex's plain number works too"


def test_watermarks_and_backpressure_of_a_vertex(job):
    _, double_id, _ = _vertex_ids(job)

    def watermarks() -> list[int]:
        return [int(entry["value"]) for entry in job.get(f"jobs/{job.job_id}/vertices/{double_id}/watermarks").body]

    wait_until(lambda: min(watermarks()) == RECORDS - 1, timeout=15, what="the input watermarks of 'double'")
    assert [entry["id"] for entry in job.get(f"jobs/{job.job_id}/vertices/{double_id}/watermarks").body] == [
        "0.currentInputWatermark",
        "1.currentInputWatermark",
    ]
    pressure = job.get(f"jobs/{job.job_id}/vertices/{double_id}/backpressure").body
    assert pressure["status"] == "ok" and pressure["backpressure-level"] in ("ok", "low", "high")
    assert [s["subtask"] for s in pressure["subtasks"]] == [0, 1]
    for subtask in pressure["subtasks"]:
        assert 0 <= subtask["ratio"] <= 1 and 0 <= subtask["busyRatio"] <= 1 and 0 <= subtask["idleRatio"] <= 1


def test_checkpoints_count_the_savepoint_and_the_restart_shows_in_exceptions(job):
    checkpoints = job.get(f"jobs/{job.job_id}/checkpoints").body
    assert checkpoints["counts"]["completed"] == 1 and checkpoints["counts"]["triggered"] == 1
    assert checkpoints["counts"]["in_progress"] == 0 and checkpoints["counts"]["failed"] == 0
    savepoint = checkpoints["latest"]["savepoint"]
    assert savepoint["is_savepoint"] and savepoint["status"] == "COMPLETED" and savepoint["external_path"]
    (entry,) = checkpoints["history"]
    assert {"id", "status", "trigger_timestamp", "end_to_end_duration", "state_size"} <= set(entry)
    assert entry["state_size"] > 0 and entry["num_acknowledged_subtasks"] == 5
    config = job.get(f"jobs/{job.job_id}/checkpoints/config").body
    assert config["interval"] == 3_600_000 and config["mode"] == "EXACTLY_ONCE"
    exceptions = job.get(f"jobs/{job.job_id}/exceptions").body
    (root,) = exceptions["exceptionHistory"]["entries"]
    assert root["exceptionName"] == "ScriptCrash" and root["taskName"] == "Source: numbers (1/1)"
    assert "scripted crash" in exceptions["root-exception"] and exceptions["timestamp"] == root["timestamp"]


def test_job_and_vertex_metrics_by_flinks_names(job):
    ids = {entry["id"] for entry in job.get(f"jobs/{job.job_id}/metrics").body}
    assert {
        "uptime",
        "numRestarts",
        "lastCheckpointDuration",
        "lastCheckpointSize",
        "numberOfCompletedCheckpoints",
        "numberOfFailedCheckpoints",
    } <= ids
    values = {e["id"]: e["value"] for e in job.get(f"jobs/{job.job_id}/metrics?get=numRestarts,uptime").body}
    assert values["numRestarts"] == "1" and int(values["uptime"]) > 0
    _, double_id, _ = _vertex_ids(job)
    vertex_ids = {entry["id"] for entry in job.get(f"jobs/{job.job_id}/vertices/{double_id}/metrics").body}
    assert {"0.numRecordsIn", "1.busyTimeMsPerSecond", "0.double.numRecordsOut", "1.double.records.seen"} <= vertex_ids
    seen = job.get(f"jobs/{job.job_id}/vertices/{double_id}/metrics?get=0.double.records.seen,1.double.records.seen")
    assert sum(int(entry["value"]) for entry in seen.body) == RECORDS


def test_the_dashboard_and_prometheus_are_served(job):
    page = job.get("")
    assert page.status == 200 and "fluvial" in page.body and "dashboard.js" in page.body
    assert job.get("static/dashboard.js").status == 200
    assert job.get("config").body["refresh-interval"] == 1000
    text = job.get("metrics").body
    assert "flink_taskmanager_job_task_operator_numRecordsIn{" in text and "flink_jobmanager_job_uptime{" in text


def test_each_taskmanagers_process_metrics_are_listed_and_exported(job):
    managers = [m for m in job.get("taskmanagers").body["taskmanagers"]]
    listed = job.get(f"taskmanagers/{managers[0]['id']}/metrics").body
    names = {entry["id"] for entry in listed}
    assert {"Status.Python.CPU.Load", "Status.Python.CPU.Time", "Status.Python.Memory.RSS"} <= names
    assert "Status.Python.Threads.Count" in names
    (threads,) = job.get(f"taskmanagers/{managers[0]['id']}/metrics?get=Status.Python.Threads.Count").body
    assert threads["id"] == "Status.Python.Threads.Count" and float(threads["value"]) >= 1
    # garbage collections: a TaskManager thread's are this process's own; a process's come with its heartbeats
    collections = "Status.Python.GarbageCollector.Gen0.Count"
    for manager in managers:
        wait_until(
            lambda manager=manager: (
                collections in {entry["id"] for entry in job.get(f"taskmanagers/{manager['id']}/metrics").body}
            ),
            what=f"the garbage collections of TaskManager {manager['id']}",
        )
    text = job.get("metrics").body
    assert "flink_taskmanager_Status_Python_GarbageCollector_Gen0_Count{" in text
    for manager in managers:
        assert 'flink_taskmanager_Status_Python_Memory_RSS{host="' in text
        assert f'tm_id="{sanitize(manager["id"])}"' in text
    assert job.get("taskmanagers/no-such-tm/metrics").status == 404


def test_unknown_jobs_vertices_and_routes_are_404_with_flinks_errors(job):
    for path in (
        f"jobs/{'0' * 32}",
        f"jobs/{job.job_id}/vertices/{'f' * 32}",
        "nope",
        f"jobs/{job.job_id}/savepoints/{'a' * 32}",
    ):
        reply = job.get(path)
        assert reply.status == 404 and reply.body["errors"], path
    reply = http("GET", job.url(f"jobs/{job.job_id}/exceptions?maxExceptions=lots"))
    assert reply.status == 400 and "maxExceptions" in reply.body["errors"][0]


# -- the token, and reading changes nothing ------------------------------------------------------------------------

MUTATIONS = [
    ("PATCH", "jobs/{job}?mode=cancel", None),
    ("POST", "jobs/{job}/savepoints", {"cancel-job": True}),
    ("POST", "jobs/{job}/stop", {}),
    ("POST", "jobs", None),
    ("POST", "jobs/{job}/coordinators/c", {}),
    ("DELETE", "cluster", None),
]


@pytest.mark.parametrize("method, path, body", MUTATIONS, ids=[f"{m} {p}" for m, p, _ in MUTATIONS])
@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["no token", "wrong token"])
def test_every_mutating_route_needs_the_token(job, method, path, body, token):
    reply = http(method, job.url(path.format(job=job.job_id)), token=token, body=body)
    assert reply.status == 401 and "Authorization: Bearer" in reply.body["errors"][0]
    assert reply.headers.get("www-authenticate", "").startswith("Bearer")
    assert job.client.get_job_status().result().name == "RUNNING"


def test_get_routes_never_change_the_job(job):
    before = job.get(f"jobs/{job.job_id}").body
    before_checkpoints = job.get(f"jobs/{job.job_id}/checkpoints").body["counts"]
    vertex = before["vertices"][1]["id"]
    paths = [
        "",
        "config",
        "overview",
        "jobs",
        "jobs/overview",
        "taskmanagers",
        "metrics",
        f"jobs/{job.job_id}",
        f"jobs/{job.job_id}/plan",
        f"jobs/{job.job_id}/metrics",
        f"jobs/{job.job_id}/exceptions",
        f"jobs/{job.job_id}/checkpoints",
        f"jobs/{job.job_id}/checkpoints/config",
        f"jobs/{job.job_id}/vertices/{vertex}",
        f"jobs/{job.job_id}/vertices/{vertex}/metrics",
        f"jobs/{job.job_id}/vertices/{vertex}/watermarks",
        f"jobs/{job.job_id}/vertices/{vertex}/backpressure",
        f"jobs/{job.job_id}/savepoints/{'b' * 32}",
        f"jobs/{job.job_id}/stop",
        f"jobs/{job.job_id}/savepoints",
        f"jobs/{job.job_id}?mode=cancel",
        "cluster",
        f"jobs/{job.job_id}/coordinators/c",
    ]
    for path in paths:
        assert job.get(path).status in (200, 404, 405), path
    for mutating in (f"jobs/{job.job_id}/stop", "cluster", f"jobs/{job.job_id}/coordinators/c"):
        assert job.get(mutating).status == 405, f"GET {mutating} is refused, not served"
    time.sleep(0.2)  # anything a GET had started would have had time to show
    after = job.get(f"jobs/{job.job_id}").body
    assert after["state"] == "RUNNING" and job.get("jobs").body["jobs"] == [{"id": job.job_id, "status": "RUNNING"}]
    assert job.get(f"jobs/{job.job_id}/checkpoints").body["counts"] == before_checkpoints
    assert [v["tasks"] for v in after["vertices"]] == [v["tasks"] for v in before["vertices"]]
    assert {e["id"]: e["value"] for e in job.get(f"jobs/{job.job_id}/metrics?get=numRestarts").body} == {
        "numRestarts": "1"
    }


# -- mutating, with the token --------------------------------------------------------------------------------------


def test_an_embedded_cluster_refuses_the_session_routes_with_409(job):
    """Its collected records go to the program that runs it, and it ends with that program."""
    taken = http("POST", job.url(f"jobs/{job.job_id}/coordinators/{'c' * 32}"), job.token, body={})
    assert taken.status == 409 and "go to the program that runs it" in taken.body["errors"][0]
    shutdown = http("DELETE", job.url("cluster"), job.token)
    assert shutdown.status == 409 and "cancel the jobs instead" in shutdown.body["errors"][0]
    assert job.client.get_job_status().result().name == "RUNNING"


@pytest.mark.parametrize("mode", execution_modes(), ids=lambda mode: mode.value)
def test_savepoint_then_cancel_through_the_api(mode, tmp_path):
    served = serve_job(mode, str(tmp_path), "savepoint job")
    try:
        target = str(tmp_path / "by-rest")
        reply = http(
            "POST",
            served.url(f"jobs/{served.job_id}/savepoints"),
            served.token,
            {"target-directory": target, "cancel-job": False},
        )
        assert reply.status == 202 and len(reply.body["request-id"]) == 32
        status_path = f"jobs/{served.job_id}/savepoints/{reply.body['request-id']}"
        wait_until(
            lambda: served.get(status_path).body["status"]["id"] == "COMPLETED",
            timeout=30,
            what="the savepoint operation",
        )
        location = served.get(status_path).body["operation"]["location"]
        path = location.removeprefix("file://")
        assert path.startswith(target) and os.path.exists(os.path.join(path, "_metadata"))
        assert served.get(f"jobs/{served.job_id}").body["state"] == "RUNNING", "a savepoint alone does not stop it"
        bad = http("POST", served.url(f"jobs/{served.job_id}/savepoints"), served.token, {"cancel-job": "yes"})
        assert bad.status == 400 and "'cancel-job' must be true or false" in bad.body["errors"][0]
        assert http("PATCH", served.url(f"jobs/{served.job_id}?mode=cancel"), served.token).status == 202
        wait_until(
            lambda: served.client.get_job_status().result().name == "CANCELED", timeout=30, what="the job cancelled"
        )
    finally:
        served.stop()


@pytest.mark.parametrize("mode", execution_modes(), ids=lambda mode: mode.value)
def test_stop_with_a_savepoint_and_submit_a_job_through_the_api(mode, tmp_path):
    served = serve_job(mode, str(tmp_path), "stop job")
    try:
        env = environment(mode, Configuration())
        env.set_parallelism(1)
        env.from_source(NumberSequenceSource(1, 50), source_name="submitted numbers").add_sink(Discard())
        job_graph = env.get_job_graph("submitted job")
        refused = http(
            "POST",
            served.url("jobs"),
            served.token,
            raw=b"not a pickle",
            content_type="application/x-fluvial-job-graph",
        )
        assert refused.status == 400 and "not a pickled JobGraph" in refused.body["errors"][0]
        submitted = http(
            "POST",
            served.url("jobs"),
            served.token,
            raw=cloudpickle.dumps(job_graph),
            content_type="application/x-fluvial-job-graph",
        )
        assert submitted.status == 202 and submitted.body == {
            "jobid": job_graph.job_id,
            "jobUrl": f"/jobs/{job_graph.job_id}",
        }
        wait_until(
            lambda: served.get(f"jobs/{job_graph.job_id}").body["state"] == "FINISHED",
            timeout=30,
            what="the submitted job finished",
        )
        vertex = served.get(f"jobs/{job_graph.job_id}").body["vertices"][0]["id"]
        emitted = served.get(
            f"jobs/{job_graph.job_id}/vertices/{vertex}/metrics?get=0.Source%3A%20submitted%20numbers.numRecordsOut"
        ).body
        assert emitted == [{"id": "0.Source: submitted numbers.numRecordsOut", "value": "50"}]
        assert {job["id"] for job in served.get("jobs").body["jobs"]} == {served.job_id, job_graph.job_id}
        assert served.get("overview").body["jobs-finished"] == 1

        reply = http(
            "POST",
            served.url(f"jobs/{served.job_id}/stop"),
            served.token,
            {"targetDirectory": str(tmp_path / "stopped")},
        )
        assert reply.status == 202
        assert reply.body["request-id"]
        # the job ends once its savepoint is complete, and with it this embedded server: the savepoint is read
        # from disk, not polled from a server on its way out (GET .../savepoints/:id is tested above)
        wait_until(
            lambda: served.client.get_job_status().result().name in ("CANCELED", "FINISHED"),
            timeout=30,
            what="the stopped job ending",
        )
        assert list((tmp_path / "stopped").glob("savepoint-*/chk-*/_metadata"))
    finally:
        served.stop()


def _slow(value):
    time.sleep(0.0001)  # 10,000 records a second at most: far slower than the source
    return value


@pytest.mark.parametrize("mode", execution_modes(), ids=lambda mode: mode.value)
def test_back_pressure_shows_where_a_slow_operator_holds_up_its_producer(mode):
    """The slow map runs in its own slot sharing group, on the second TaskManager: its producer's output
    channels fill up, so the producer is back-pressured and the slow map is busy."""
    configuration = Configuration()
    configuration.set_string("rest.port", "0")
    configuration.set_string("local.number-taskmanager", "2")
    configuration.set_string("metrics.fetcher.update-interval", "200 ms")
    env = environment(mode, configuration)
    env.set_parallelism(1)
    env.from_source(NumberSequenceSource(1, 10**9), source_name="numbers").map(_slow).name("slow").slot_sharing_group(
        "slow"
    ).add_sink(Discard())
    client = env.execute_async("back pressure job")
    try:
        address = client.web.address
        job_id = str(client.get_job_id())

        def pressure(vertex: int) -> dict:
            return http("GET", f"{address}/jobs/{job_id}/vertices/{vertex}/backpressure").body

        wait_until(
            lambda: pressure(1)["backpressure-level"] == "high" and pressure(2)["subtasks"][0]["busyRatio"] > 0.5,
            timeout=30,
            what="the source back-pressured and the slow map busy",
        )
        assert pressure(2)["backpressure-level"] == "ok", "the slow map itself is not held up"
    finally:
        client.cancel()
        with pytest.raises(Exception):
            client.get_job_execution_result().result(30)
