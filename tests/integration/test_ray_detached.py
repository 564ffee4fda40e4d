"""Detached jobs on Ray (`execution.attached: false`, `fluvial run -d`) on the session's Ray cluster: the client
leaves while the job runs, another finds it by id and gets its result; a failure, a cancel and a job that cannot
start come back as an attached job's would; the JobMaster actor leaves after its retention, and nothing of the
job stays reserved."""

from __future__ import annotations

import subprocess

import pytest

from fluvial.cluster.ray import detached
from fluvial.cluster.ray.detached import DetachedJobClient
from fluvial.common import Configuration
from fluvial.common.errors import JobCancelledException, JobExecutionException, ResourceError
from fluvial.common.job_execution_result import DetachedJobExecutionResult
from fluvial.common.job_status import JobStatus
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import wait_until
from tests.conftest import CPUS_PER_NODE
from tests.unit.cli.helpers import fluvial_process

pytestmark = [pytest.mark.usefixtures("ray_cluster"), pytest.mark.timeout(120)]

JOB = """\
import os, time
from fluvial.datastream import SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource

class CountToFile(SinkFunction):
    def open(self, runtime_context):
        self.count, self.subtask = 0, runtime_context.get_index_of_this_subtask()

    def invoke(self, value, context):
        self.count += 1

    def close(self):
        with open(os.path.join({out!r}, str(self.subtask)), "w") as out:
            out.write(str(self.count))

def slowly(value):
    if value % 500 == 0:
        time.sleep(0.1)
    return value

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.from_source(NumberSequenceSource(1, 20_000)).map(slowly).add_sink(CountToFile())
print("execute returned", env.execute("detached"))
"""


def placement_group_state(job_id: str) -> str | None:
    import ray

    for group in ray.util.placement_group_table().values():
        if group["name"] == f"fluvial-{job_id}":
            return group["state"]
    return None


def test_fluvial_run_detached_leaves_the_job_running_and_another_client_gets_its_result(tmp_path, ray_cluster):
    out = tmp_path / "counts"
    out.mkdir()
    job = tmp_path / "job.py"
    job.write_text(JOB.format(out=str(out)))
    process = fluvial_process(
        "run",
        "-d",
        "--target",
        "ray",
        "-D",
        f"ray.address={ray_cluster.address}",
        job,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "execute returned DetachedJobExecutionResult(job_id=" in stdout
    job_id = stdout.split("Job has been submitted with JobID ", 1)[1].split()[0]
    assert not list(out.iterdir()), "the job ended before its client did: it was not left running"

    client = DetachedJobClient.of(job_id)  # this process is another client of the cluster
    assert client.get_job_status().result(30) in (JobStatus.RUNNING, JobStatus.FINISHED)
    result = client.get_job_execution_result().result(60)
    assert str(result.get_job_id()) == job_id and result.get_net_runtime() > 0
    assert sum(int(path.read_text()) for path in out.iterdir()) == 20_000
    wait_until(lambda: placement_group_state(job_id) == "REMOVED", timeout=30, what="the job's slots to be freed")
    import ray

    ray.kill(ray.get_actor(detached.actor_name(job_id), namespace=detached.NAMESPACE))  # before its retention


def detached_environment() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("execution.target", "ray").set_string("execution.attached", "false")
    )
    env.set_parallelism(2)
    return env


def fail_at(value):
    if value == 300:
        raise ZeroDivisionError("the user's failure")
    return value


def test_a_failure_comes_back_with_the_users_error_and_the_actor_leaves_after_its_retention(monkeypatch):
    monkeypatch.setattr(detached, "RESULT_RETENTION_S", 1.0)
    env = detached_environment()
    env.from_source(NumberSequenceSource(1, 1000)).map(fail_at).add_sink(lambda value: None)
    submitted = env.execute("failing detached")
    assert isinstance(submitted, DetachedJobExecutionResult)
    job_id = str(submitted.get_job_id())
    with pytest.raises(JobExecutionException) as info:
        DetachedJobClient.of(job_id).get_job_execution_result().result(60)
    assert "ZeroDivisionError" in str(info.value)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "raise ZeroDivisionError" in str(info.value.__cause__.__cause__)  # the remote traceback's text

    def gone() -> bool:
        try:
            DetachedJobClient.of(job_id)
        except LookupError:
            return True
        return False

    wait_until(gone, timeout=30, what="the JobMaster actor to leave after its retention")


def test_a_detached_job_is_cancelled_through_its_client(monkeypatch):
    monkeypatch.setattr(detached, "RESULT_RETENTION_S", 1.0)
    env = detached_environment()
    env.from_source(NumberSequenceSource(1, 10**12)).add_sink(lambda value: None)
    client = env.execute_async("endless detached")
    wait_until(lambda: client.get_job_status().result(30) is JobStatus.RUNNING, timeout=30, what="RUNNING")
    client.cancel().result(30)
    with pytest.raises(JobCancelledException):
        client.get_job_execution_result().result(60)


def job_master_actors() -> set[str]:
    import ray

    return {
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["name"].startswith("fluvial-job-")
    }


def test_a_detached_job_that_cannot_start_fails_its_submission_as_an_attached_one_would():
    before = job_master_actors()
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration()
        .set_string("execution.target", "ray")
        .set_string("execution.attached", "false")
        .set_string("ray.placement-timeout", "1 s")
    )
    env.set_parallelism(2 * CPUS_PER_NODE + 1)
    env.from_collection([1]).print()
    with pytest.raises(ResourceError, match=f"needs {2 * CPUS_PER_NODE + 1} task slots"):
        env.execute("too big, detached")
    wait_until(lambda: not job_master_actors() - before, timeout=30, what="the job's JobMaster actor to end")
