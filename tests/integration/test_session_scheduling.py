"""A session cluster's slots, run in this process (its TaskManagers are processes): a job that fits only after
another ends waits as CREATED and then runs; one that waits longer than slot.request.timeout fails naming the
slots; one cancelled while it waits never runs; one bigger than the cluster is refused at submission; two jobs run
at once on the same TaskManagers, each with its own records; a job that cannot start is refused whole; a job that
waits says what it waits for (REST, console, stderr); by default a TaskManager per core with one slot each, and
jobs at parallelism 1."""

from __future__ import annotations

import io
import os

import pytest

from fluvial.cluster.local_dispatcher import JobSubmissionError, RequestRefused
from fluvial.cluster.session.cluster import SessionCluster, SessionClusterSpec
from fluvial.cluster.session.rest_client import ClusterRequestError
from fluvial.common import Configuration
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.job_status import JobStatus
from fluvial.datastream import SinkFunction, StreamExecutionEnvironment
from fluvial.testing import Pause, ScriptedSource, wait_until
from fluvial.web.session import serve_session

pytestmark = pytest.mark.timeout(60)


class Discard(SinkFunction):
    def invoke(self, value, context):
        pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path_factory.mktemp("home"))  # the cluster file goes there
    configuration = Configuration().set_string("slot.request.timeout", "30 s")
    session = SessionCluster(
        SessionClusterSpec(task_managers=1, slots=2, port=0, configuration=configuration), serve_session
    )
    try:
        yield session.start()
    finally:
        session.shutdown()
        if saved is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved


@pytest.fixture(autouse=True)
def every_slot_free(request):
    """Each test starts on an idle cluster: the slots of the previous test's jobs are released by the
    TaskManager's report, which can come after that test has its results (a busy machine stretches it), and a job
    of the next test would then wait for a slot it does not expect to wait for."""
    if "cluster" in request.fixturenames:
        cluster = request.getfixturevalue("cluster")
        wait_until(
            lambda: all(manager.free_slots == 2 for manager in cluster.dispatcher.task_managers()),
            what="every slot of the cluster free before the test",
        )
    yield


def environment(cluster, parallelism: int, **keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration()
    configuration.set_string("execution.target", "remote")
    configuration.set_string("rest.port", str(cluster.address.rpartition(":")[2]))
    for key, value in keys.items():
        configuration.set_string(key.replace("_", "."), value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    return env


def paused_job(cluster, tmp_path, name: str, parallelism: int, **keys: str):
    """A job of `parallelism` subtasks that reads 3 numbers, then waits for its release file, then ends."""
    release = tmp_path / f"{name}-release"
    env = environment(cluster, parallelism, **keys)
    env.from_source(ScriptedSource([1, 2, 3, Pause(str(release))]), source_name="numbers").map(
        lambda value: value * 2
    ).add_sink(Discard())
    return env.execute_async(name), release


def status(cluster, client) -> JobStatus:
    return cluster.dispatcher.job(str(client.get_job_id())).details.status


def test_a_job_that_fits_only_later_waits_as_created_then_runs(cluster, tmp_path):
    first, release_first = paused_job(cluster, tmp_path, "first", 2)
    wait_until(lambda: status(cluster, first) is JobStatus.RUNNING, what="the first job running")
    second, release_second = paused_job(cluster, tmp_path, "second", 1)
    view = cluster.dispatcher.job(str(second.get_job_id()))
    assert view.details.status is JobStatus.CREATED
    assert {subtask.state.name for vertex in view.details.vertices for subtask in vertex.subtasks} == {"CREATED"}
    assert [manager.free_slots for manager in cluster.dispatcher.task_managers()] == [0]
    with pytest.raises(RequestRefused, match="has no state to take a savepoint of: it waits for task slots"):
        cluster.dispatcher.trigger_savepoint(str(second.get_job_id()), str(tmp_path), False)
    release_first.touch()
    first.get_job_execution_result().result(timeout=30)
    wait_until(lambda: status(cluster, second) is JobStatus.RUNNING, what="the second job running")
    release_second.touch()
    second.get_job_execution_result().result(timeout=30)
    assert [manager.free_slots for manager in cluster.dispatcher.task_managers()] == [2]


def test_a_job_waiting_longer_than_slot_request_timeout_fails_naming_the_slots(cluster, tmp_path):
    holder, release = paused_job(cluster, tmp_path, "holder", 2)
    try:
        waiter, _ = paused_job(cluster, tmp_path, "waiter", 1, slot_request_timeout="200 ms")
        with pytest.raises(JobExecutionException) as failed:
            waiter.get_job_execution_result().result(timeout=30)
        message = str(failed.value)
        assert "could not get the 1 task slots it needs within slot.request.timeout (200 ms)" in message
        assert f"0 of the cluster's 2 slots were free; jobs holding slots: {holder.get_job_id()} (2)" in message
        details = cluster.dispatcher.job(str(waiter.get_job_id())).details
        assert details.status is JobStatus.FAILED and details.exceptions[0].exception_name == "ResourceError"
    finally:
        release.touch()
    holder.get_job_execution_result().result(timeout=30)


def test_a_job_cancelled_while_it_waits_never_runs(cluster, tmp_path):
    holder, release = paused_job(cluster, tmp_path, "holder", 2)
    waiter, release_waiter = paused_job(cluster, tmp_path, "waiter", 2)
    release_waiter.touch()  # it would end at once if it ever ran
    waiter.cancel().result(timeout=10)
    with pytest.raises(JobCancelledException):
        waiter.get_job_execution_result().result(timeout=30)
    release.touch()
    holder.get_job_execution_result().result(timeout=30)
    details = cluster.dispatcher.job(str(waiter.get_job_id())).details
    assert details.status is JobStatus.CANCELED
    assert details.checkpoints.triggered == 0 and details.restarts == 0
    assert {subtask.start_time for vertex in details.vertices for subtask in vertex.subtasks} == {-1}  # never ran


def test_a_job_bigger_than_the_cluster_is_refused_at_submission_naming_both_numbers(cluster, tmp_path):
    env = environment(cluster, 3)
    env.from_collection([1, 2, 3]).add_sink(Discard())
    with pytest.raises(ClusterRequestError) as refused:
        env.execute_async("too big")
    assert refused.value.status == 400
    assert "job 'too big' needs 3 task slots" in str(refused.value)
    assert "but the cluster has 2 (1 TaskManagers with 2 slots each)" in str(refused.value)


def test_a_job_whose_jobmaster_cannot_be_built_is_refused_whole(cluster, tmp_path):
    env = environment(cluster, 1, execution_savepoint_path=str(tmp_path / "no-such-savepoint"))
    env.from_collection([1]).add_sink(Discard())
    jobs_before = len(cluster.dispatcher.jobs())
    with pytest.raises(ClusterRequestError, match="job 'broken' cannot start: .*no-such-savepoint"):
        env.execute_async("broken")
    assert len(cluster.dispatcher.jobs()) == jobs_before
    # a slot the refused job (or the previous test's job) held is released by the TaskManager's report: poll for it
    wait_until(
        lambda: [manager.free_slots for manager in cluster.dispatcher.task_managers()] == [2],
        what="both slots free again",
    )


def test_two_jobs_run_at_once_on_the_same_task_managers_each_with_its_own_records(cluster):
    left = (
        environment(cluster, 1)
        .from_collection(list(range(0, 500)))
        .map(lambda v: ("left", v * 2))
        .execute_and_collect()
    )
    right = (
        environment(cluster, 1)
        .from_collection(list(range(1000, 1300)))
        .map(lambda v: ("right", v + 1))
        .execute_and_collect()
    )
    got_left, got_right = [], []
    with left, right:
        for _ in range(250):  # read both while both run
            got_left.append(next(left))
            got_right.append(next(right))
        got_left += list(left)
        got_right += list(right)
    assert got_left == [("left", v * 2) for v in range(0, 500)]
    assert got_right == [("right", v + 1) for v in range(1000, 1300)]


def test_a_collect_id_the_job_does_not_have_is_refused(cluster, tmp_path):
    holder, release = paused_job(cluster, tmp_path, "plain", 1)
    try:
        with pytest.raises(RequestRefused, match="has no collect sink nope"):
            cluster.dispatcher.take_results(str(holder.get_job_id()), "nope", 0, False)
        with pytest.raises(JobSubmissionError, match="already submitted"):
            cluster.dispatcher.submit_job(cluster.dispatcher._job(str(holder.get_job_id())).job_graph)
    finally:
        release.touch()
    holder.get_job_execution_result().result(timeout=30)


def test_a_client_that_stops_reading_holds_back_its_own_job_only(cluster):
    """Both collect sinks run on the one TaskManager: the credit window is per collect sink, not per process."""
    stalled = environment(cluster, 1).from_collection(list(range(200_000))).execute_and_collect()
    with stalled:
        assert next(stalled) == 0  # then read no more while the other job runs
        other = environment(cluster, 1).from_collection(list(range(5_000))).map(lambda v: v + 1).execute_and_collect()
        with other:
            assert list(other) == list(range(1, 5_001))


def test_a_waiting_job_says_what_it_waits_for_in_the_client_and_the_rest_api(cluster, tmp_path, capsys, monkeypatch):
    from fluvial.cli.progress import ConsoleProgress
    from fluvial.cluster.session import remote_job_client
    from tests.integration.rest_client import http

    monkeypatch.setattr(remote_job_client, "WAIT_REPORT_SECONDS", 0.2)
    monkeypatch.setattr("fluvial.cli.progress.WAIT_REPORT_SECONDS", 0.2)
    holder, release = paused_job(cluster, tmp_path, "holder", 2)
    wait_until(lambda: status(cluster, holder) is JobStatus.RUNNING, what="the holder running")
    waiter, release_waiter = paused_job(cluster, tmp_path, "waiter", 1)
    lines = io.StringIO()
    waiter.add_progress_listener(ConsoleProgress(lines, terminal=False))
    try:
        job = http("GET", f"{cluster.rest_url}/jobs/{waiter.get_job_id()}").body
        assert job["state"] == "CREATED"
        wait = job["waiting-for-slots"]
        assert (wait["needed"], wait["free"], wait["total"], wait["jobs-ahead"]) == (1, 0, 2, 0)
        said = "is CREATED, waiting for 1 task slot (0 of the cluster's 2 free) for "
        wait_until(lambda: lines.getvalue().count(said) >= 2, what="the console saying twice what the job waits for")
        assert "of its slot.request.timeout (30 s)" in lines.getvalue()
        # a client without a console says it on stderr
        quiet, release_quiet = paused_job(cluster, tmp_path, "quiet", 1)
        release_quiet.touch()
        said = (
            f"Job 'quiet' ({quiet.get_job_id()}) is waiting for 1 task slot (0 of the cluster's 2 free, 1 job "
            "waiting before it) for "
        )
        printed = io.StringIO()
        wait_until(
            lambda: printed.write(capsys.readouterr().err) is None or printed.getvalue().count(said) >= 2,
            what="the client saying twice on stderr what the job waits for",
        )
        assert "Job 'holder'" not in printed.getvalue()
    finally:
        release.touch()
    holder.get_job_execution_result().result(timeout=30)
    quiet.get_job_execution_result().result(timeout=30)
    wait_until(lambda: status(cluster, waiter) is JobStatus.RUNNING, what="the waiter running")
    assert "waiting-for-slots" not in http("GET", f"{cluster.rest_url}/jobs/{waiter.get_job_id()}").body
    release_waiter.touch()
    waiter.get_job_execution_result().result(timeout=30)


def test_a_session_cluster_has_a_task_manager_per_core_with_one_slot_and_jobs_default_to_parallelism_1(
    tmp_path, monkeypatch
):
    spec = SessionClusterSpec(port=0)
    assert (spec.task_managers, spec.slots) == (os.cpu_count(), 1)
    session = SessionCluster(spec, serve_session, cluster_file=tmp_path / "cluster.json").start()
    monkeypatch.setenv("FLUVIAL_TOKEN", session.token)  # the module's cluster owns ~/.fluvial/cluster.json
    try:
        managers = session.dispatcher.task_managers()
        assert len(managers) == os.cpu_count() and {manager.slots for manager in managers} == {1}
        assert len(set(session.task_manager_pids)) == os.cpu_count()
        configuration = (
            Configuration()
            .set_string("execution.target", "remote")
            .set_string("rest.port", session.address.rpartition(":")[2])
        )
        env = StreamExecutionEnvironment.get_execution_environment(configuration)
        assert env.get_parallelism() == 1
        env.from_collection([1, 2, 3]).map(lambda value: value * 2).add_sink(Discard())
        client = env.execute_async("default parallelism")
        client.get_job_execution_result().result(timeout=30)
        details = session.dispatcher.job(str(client.get_job_id())).details
        assert {vertex.parallelism for vertex in details.vertices} == {1}
    finally:
        session.shutdown()
