"""What is decided before Ray is touched: the ray.* keys and the keys refused on Ray, how many TaskManagers a
job gets and their bundles, storage every node must see, and the error when the ray package is missing."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.cluster.ray.connection import connect
from fluvial.cluster.ray.local_cluster import LocalRayCluster, NodeSpec
from fluvial.cluster.ray.placement import TaskManagerLayout, check_storage_is_shared
from fluvial.cluster.ray.settings import RaySettings
from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage, JobManagerCheckpointStorage


def settings(**keys: str) -> RaySettings:
    configuration = Configuration()
    for key, value in keys.items():
        configuration.set_string(key.replace("_", "."), value)
    return RaySettings.from_configuration(configuration)


def test_defaults_spread_one_minute_nothing_shipped_nothing_shared():
    assert RaySettings.from_configuration(Configuration()) == RaySettings(None, "SPREAD", 60.0, None, False)


def test_the_keys_become_typed_settings(tmp_path):
    configuration = (
        Configuration()
        .set_string("ray.address", "127.0.0.2:6380")
        .set_string("ray.placement-strategy", "strict_pack")
        .set_string("ray.placement-timeout", "2 s")
        .set_string("ray.working-dir", str(tmp_path))
        .set_string("ray.shared-filesystem", "true")
    )
    assert RaySettings.from_configuration(configuration) == RaySettings(
        "127.0.0.2:6380", "STRICT_PACK", 2.0, str(tmp_path), True
    )


@pytest.mark.parametrize(
    "key, value, reason",
    [
        ("taskmanager.bind-host", "0.0.0.0", "listens on the address of its Ray node"),
        ("local.number-taskmanager", "3", "as many TaskManager actors as its slots need"),
        ("local.taskmanager.mode", "process", "every TaskManager is a Ray actor"),
    ],
)
def test_keys_that_mean_nothing_on_ray_are_refused_by_name(key, value, reason):
    with pytest.raises(ConfigurationError, match=f"'{key}' does not apply with execution.target ray.*{reason}"):
        RaySettings.from_configuration(Configuration().set_string(key, value))


def test_a_ray_client_address_and_a_missing_working_dir_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="is a Ray Client address.*run the job on a node"):
        RaySettings.from_configuration(Configuration().set_string("ray.address", "ray://head:10001"))
    with pytest.raises(ConfigurationError, match="ray.working-dir .*nowhere' is not a directory"):
        RaySettings.from_configuration(Configuration().set_string("ray.working-dir", str(tmp_path / "nowhere")))
    with pytest.raises(ConfigurationError, match="did you mean 'ray.placement-timeout'"):
        Configuration().set_string("ray.placement-timout", "1 s")


@given(required=st.integers(1, 500), per_task_manager=st.one_of(st.none(), st.integers(1, 16)))
def test_a_job_gets_just_enough_task_managers_each_one_bundle_of_one_cpu_per_slot(required, per_task_manager):
    layout = TaskManagerLayout.for_job(required, per_task_manager)
    slots_each = per_task_manager or 1  # Flink's default: one slot per TaskManager
    assert layout.slots_each == slots_each
    assert layout.slots >= required > layout.slots - slots_each  # no TaskManager more than needed
    assert layout.bundles == [{"CPU": float(slots_each)}] * layout.count


def job_graph(storage=None, savepoint: str | None = None, savepoints_dir: str | None = None):
    configuration = Configuration()
    if savepoint:
        configuration.set_string("execution.savepoint.path", savepoint)
    if savepoints_dir:
        configuration.set_string("state.savepoints.dir", savepoints_dir)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    if storage is not None:
        env.enable_checkpointing(100)
        env.get_checkpoint_config().set_checkpoint_storage(storage)
    env.from_collection([1]).print()
    return env.get_job_graph()


@pytest.mark.parametrize(
    "graph",
    [
        lambda: job_graph(FileSystemCheckpointStorage("file:///checkpoints")),
        lambda: job_graph(FileSystemCheckpointStorage("/checkpoints")),
        lambda: job_graph(savepoint="/savepoints/savepoint-1"),
        lambda: job_graph(savepoints_dir="file:///savepoints"),
    ],
    ids=["file-url", "plain-path", "restore-from", "savepoints-dir"],
)
def test_a_local_path_with_several_nodes_is_refused_naming_the_fixes(graph):
    graph = graph()
    with pytest.raises(
        ConfigurationError, match="is a local path, and the Ray cluster has 3 nodes.*s3://.*ray.shared-filesystem: true"
    ):
        check_storage_is_shared(graph, nodes=3, shared_filesystem=False)
    check_storage_is_shared(graph, nodes=1, shared_filesystem=False)  # one node: one filesystem
    check_storage_is_shared(graph, nodes=3, shared_filesystem=True)  # said to be shared (NFS)


def test_object_stores_and_jobmanager_storage_pass_on_any_number_of_nodes():
    check_storage_is_shared(job_graph(FileSystemCheckpointStorage("s3://bucket/chk")), nodes=5, shared_filesystem=False)
    check_storage_is_shared(job_graph(JobManagerCheckpointStorage()), nodes=5, shared_filesystem=False)
    check_storage_is_shared(job_graph(), nodes=5, shared_filesystem=False)


def test_without_the_ray_package_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ImportError, match=r"needs the 'ray' package.*pip install 'fluvial\[ray\]'"):
        connect(None)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.5", "localhost"])
def test_a_local_cluster_only_takes_loopback_addresses_other_than_127_0_0_1(address):
    with pytest.raises(ValueError, match="not a loopback address other than 127.0.0.1"):
        LocalRayCluster([NodeSpec(address, 1)])
