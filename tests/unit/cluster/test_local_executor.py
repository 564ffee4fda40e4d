"""LocalExecutor (`execution.target: local`): the Pipeline compiled and run on an embedded MiniCluster, its
JobClient answering for the job; and `executor_for` choosing it by target."""

from __future__ import annotations

import pytest

from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.local_executor import LocalExecutor
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError
from fluvial.common.job_status import JobStatus
from fluvial.common.pipeline_executor import executor_for
from fluvial.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.timeout(60)


def pipeline_with_collect(collect_id: str = "out"):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = env.from_collection(["a", "b", "c"]).map(str.upper)
    env._add_collect_sink(stream, collect_id)
    return env._pipeline("local executor test")


def test_the_pipeline_runs_on_a_mini_cluster_and_the_client_answers_for_it() -> None:
    pipeline = pipeline_with_collect()
    client = LocalExecutor(Configuration()).execute(pipeline)
    assert isinstance(client, MiniClusterJobClient)
    with client.collect_results("out") as results:
        assert list(results) == ["A", "B", "C"]
    result = client.get_job_execution_result().result(30)
    assert result.get_job_id() == client.get_job_id()
    assert client.get_job_status().result(0) is JobStatus.FINISHED
    assert client.cluster.job_master.job_graph.job_name == "local executor test"


@pytest.mark.parametrize("target", ["local", "embedded"])
def test_local_targets_choose_the_local_executor(target: str) -> None:
    assert isinstance(executor_for(target, Configuration()), LocalExecutor)


def test_an_unknown_target_names_the_ones_there_are() -> None:
    with pytest.raises(ConfigurationError, match="execution.target 'yarn' is not available.*local, embedded"):
        executor_for("yarn", Configuration())


def test_ray_keys_are_refused_on_this_machine_naming_the_target_they_need() -> None:
    pipeline = pipeline_with_collect()
    configuration = Configuration().set_string("ray.address", "auto").set_string("ray.placement-timeout", "5 s")
    with pytest.raises(
        ConfigurationError,
        match="ray.address, ray.placement-timeout only apply with "
        "execution.target ray.*set execution.target: ray, or remove them",
    ):
        LocalExecutor(configuration).execute(pipeline)


def test_a_detached_job_is_refused_on_this_machine_naming_the_target_it_needs() -> None:
    configuration = Configuration().set_string("execution.attached", "false")
    with pytest.raises(
        ConfigurationError,
        match="execution.attached false asks for a job that runs on after this process ends.*set execution.target: ray",
    ):
        LocalExecutor(configuration).execute(pipeline_with_collect())


def test_execute_and_collect_needs_an_attached_job() -> None:
    from fluvial.common.errors import InvalidJobError

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("execution.target", "ray").set_string("execution.attached", "false")
    )
    with pytest.raises(InvalidJobError, match="execute_and_collect brings the records to this program"):
        env.from_collection([1]).execute_and_collect()
