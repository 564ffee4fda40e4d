"""MiniCluster: as many TaskManagers as configured with just enough slots between them, the collect buffers of
execute_and_collect, and a shutdown that leaves no TaskManager thread behind — after the job ends, and when the
submission itself fails."""

from __future__ import annotations

import pytest

from fluvial.cluster.mini_cluster import MiniCluster
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ResourceError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import wait_until

pytestmark = pytest.mark.timeout(60)


def collecting_job(parallelism: int = 2, collect_id: str = "results"):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    stream = env.from_source(NumberSequenceSource(1, 100)).map(lambda v: v * 2)
    env._add_collect_sink(stream, collect_id)
    return env.get_job_graph()


def threads() -> Configuration:
    """These tests look at TaskManagers as threads of this process (process mode: tests/integration)."""
    return Configuration().set_string("local.taskmanager.mode", "thread")


def threads_stopped(cluster: MiniCluster) -> bool:
    return not any(tm._executor._thread.is_alive() for tm in cluster.task_managers)


def test_a_job_runs_on_the_configured_task_managers_and_its_records_are_collected() -> None:
    job_graph = collecting_job(parallelism=3)
    cluster = MiniCluster(threads().set_string("local.number-taskmanager", "2"))
    client = cluster.submit(job_graph)
    assert len(cluster.task_managers) == 2
    assert sum(tm.number_of_slots for tm in cluster.task_managers) >= job_graph.required_slots()
    with client.collect_results("results") as results:
        assert sorted(results) == [2 * v for v in range(1, 101)]
    client.get_job_execution_result().result(30)
    wait_until(lambda: threads_stopped(cluster), what="the TaskManagers to stop after the job")


def test_the_slots_per_task_manager_can_be_set() -> None:
    cluster = MiniCluster(threads().set_string("taskmanager.numberOfTaskSlots", "5"))
    client = cluster.submit(collecting_job(parallelism=2))
    assert [tm.number_of_slots for tm in cluster.task_managers] == [5]
    client.get_job_execution_result().result(30)
    wait_until(lambda: threads_stopped(cluster), what="the TaskManagers to stop after the job")


def test_a_submission_that_fails_shuts_the_cluster_down() -> None:
    cluster = MiniCluster(threads().set_string("taskmanager.numberOfTaskSlots", "1"))
    with pytest.raises(ResourceError):
        cluster.submit(collecting_job(parallelism=2))
    assert cluster.task_managers and cluster.job_master is None
    wait_until(lambda: threads_stopped(cluster), what="the TaskManagers of a failed submission to stop")
