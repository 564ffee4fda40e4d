"""The environment and job API details PyFlink's own tests check (test_stream_execution_environment.py,
test_slot_sharing_group.py, test_data_stream.py), where no JVM is needed."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

from fluvial.common import Configuration, Types
from fluvial.common.errors import ConfigurationError, InvalidJobError, NotYetSupportedError
from fluvial.datastream import (
    CheckpointingMode,
    MemorySize,
    RuntimeExecutionMode,
    SlotSharingGroup,
    SourceFunction,
    StreamExecutionEnvironment,
)


def env_of(parallelism: int = 1, **config: str) -> StreamExecutionEnvironment:
    configuration = Configuration()
    for key, value in config.items():
        configuration.set_string(key.replace("_", "."), value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    return env


def test_getters_answer_what_the_setters_set():
    env = env_of()
    assert env.get_buffer_timeout() == 100
    env.set_buffer_timeout(-1)
    assert env.get_buffer_timeout() == -1
    with pytest.raises(ConfigurationError):
        env.set_buffer_timeout(-2)
    env.set_max_parallelism(64)
    assert env.get_max_parallelism() == 64
    assert env.is_chaining_enabled() and env.is_chaining_of_operators_with_different_max_parallelism_enabled()
    env.disable_operator_chaining()
    assert not env.is_chaining_enabled()
    env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
    assert env.get_checkpoint_interval() == 1000
    assert env.get_checkpointing_consistency_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert not env.is_unaligned_checkpoints_enabled() and not env.is_force_unaligned_checkpoints()
    assert env.get_default_savepoint_directory() is None
    env.set_default_savepoint_directory("/tmp/savepoints")
    assert env.get_default_savepoint_directory() == "/tmp/savepoints"
    assert env.enable_changelog_state_backend(False) is env and not env.is_changelog_state_backend_enabled()
    assert env.enable_changelog_state_backend(True) is env and env.is_changelog_state_backend_enabled()


def test_default_local_parallelism_is_the_default_of_jobs_that_set_none():
    before = StreamExecutionEnvironment._default_local_parallelism
    try:
        StreamExecutionEnvironment.set_default_local_parallelism(3)
        assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == 3
        assert StreamExecutionEnvironment.get_default_local_parallelism() == 3
    finally:
        StreamExecutionEnvironment._default_local_parallelism = before


def test_runtime_mode_is_recorded_under_flinks_key():
    env = env_of()
    assert env.get_runtime_mode() is RuntimeExecutionMode.STREAMING
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    assert env.get_configuration().get_string("execution.runtime-mode") == "BATCH"
    assert env.get_runtime_mode() is RuntimeExecutionMode.BATCH
    with pytest.raises(InvalidJobError):
        env.set_runtime_mode("batch")


class Countdown(SourceFunction):
    def __init__(self, n: int) -> None:
        self.n = n
        self.cancelled = False

    def run(self, ctx):
        for i in range(self.n):
            if self.cancelled:
                return
            ctx.collect(i)

    def cancel(self):
        self.cancelled = True


@pytest.mark.timeout(60)
def test_add_source_runs_a_source_function_and_automatic_mode_streams_an_unbounded_source():
    env = env_of()
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
    assert sorted(env.add_source(Countdown(2500)).execute_and_collect()) == list(range(2500))


def test_add_source_refuses_java_source_functions():
    with pytest.raises(InvalidJobError, match="JVM"):
        env_of().add_source("org.example.MySource")


@pytest.mark.timeout(60)
def test_add_python_file_puts_the_file_on_sys_path_for_the_job_only(tmp_path):
    module = tmp_path / "deps" / "river_helpers.py"
    module.parent.mkdir()
    module.write_text(
        textwrap.dedent("""
        def shout(text):
            return text.upper() + "!"
    """)
    )

    def use_helper(value):
        import river_helpers

        return river_helpers.shout(value)

    env = env_of()
    env.add_python_file(str(module))
    assert env.get_configuration().get_string("python.files") == str(module)
    assert list(env.from_collection(["a", "b"]).map(use_helper).execute_and_collect()) == ["A!", "B!"]
    deadline = time.monotonic() + 30
    while str(module.parent) in sys.path and time.monotonic() < deadline:  # taken off when the job has ended
        time.sleep(0.01)
    assert str(module.parent) not in sys.path
    sys.modules.pop("river_helpers", None)


def test_python_dependencies_fluvial_cannot_provide_yet_fail_at_submission(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("requests\n")
    env = env_of()
    env.set_python_requirements(str(requirements), str(tmp_path))
    assert env.get_configuration().get_string("python.requirements") == f"{requirements}#{tmp_path}"
    env.get_configuration().set_string("execution.target", "ray")
    env.from_collection([1]).print()
    with pytest.raises(NotYetSupportedError, match="python.requirements' is not supported yet when TaskManagers"):
        env.execute()

    env = env_of()
    env.add_python_archive(str(requirements), "venv")
    env.get_configuration().set_string("execution.target", "ray")
    env.from_collection([1]).print()
    with pytest.raises(NotYetSupportedError, match="python.archives"):
        env.execute()

    env = env_of()
    env.set_python_executable("/opt/other/python3")
    env.from_collection([1]).print()
    with pytest.raises(NotYetSupportedError, match="python.executable"):
        env.execute()


@pytest.mark.timeout(60)
def test_the_running_interpreter_is_an_acceptable_python_executable():
    env = env_of()
    env.set_python_executable(sys.executable)
    assert list(env.from_collection([1]).execute_and_collect()) == [1]


def test_missing_dependency_paths_and_jvm_only_calls_are_refused(tmp_path):
    env = env_of()
    with pytest.raises(InvalidJobError, match="does not exist"):
        env.add_python_file(str(tmp_path / "missing.py"))
    with pytest.raises(InvalidJobError, match="no JVM"):
        env.add_jars("file:///x.jar")
    with pytest.raises(InvalidJobError, match="no JVM"):
        env.add_classpaths("file:///x.jar")
    with pytest.raises(NotYetSupportedError, match="distributed cache"):
        env.register_cached_file("/tmp/x", "x")


# -- slot sharing groups (PyFlink's test_slot_sharing_group.py) --------------------------------------------------


def test_slot_sharing_group_with_resources():
    heap, off_heap, managed = (MemorySize.of_mebi_bytes(n) for n in (100, 200, 300))
    group = (
        SlotSharingGroup.builder("ssg")
        .set_cpu_cores(1.0)
        .set_task_heap_memory(heap)
        .set_task_off_heap_memory(off_heap)
        .set_managed_memory(managed)
        .set_external_resource("gpu", 1.0)
        .build()
    )
    assert group.get_name() == "ssg" and group.get_cpu_cores() == 1.0
    assert (group.get_task_heap_memory(), group.get_task_off_heap_memory(), group.get_managed_memory()) == (
        heap,
        off_heap,
        managed,
    )
    assert group.get_external_resources() == {"gpu": 1.0}


def test_slot_sharing_group_without_resources_and_with_incomplete_or_illegal_ones():
    plain = SlotSharingGroup.builder("ssg").build()
    assert (plain.get_cpu_cores(), plain.get_task_heap_memory(), plain.get_managed_memory()) == (None, None, None)
    assert plain.get_external_resources() == {}
    with pytest.raises(InvalidJobError, match="positive"):
        SlotSharingGroup.builder("ssg").set_cpu_cores(1.0).set_task_heap_memory(MemorySize(0))
    with pytest.raises(InvalidJobError, match="cpu cores and task heap memory are required"):
        SlotSharingGroup.builder("ssg").set_cpu_cores(1.0).set_task_off_heap_memory_mb(10).build()


def test_memory_size_orders_compares_and_parses():
    assert MemorySize.of_mebi_bytes(100) == MemorySize(100 << 20)
    assert MemorySize.of_mebi_bytes(100) <= MemorySize.of_mebi_bytes(100) <= MemorySize.of_mebi_bytes(200)
    assert not MemorySize.of_mebi_bytes(200) <= MemorySize.of_mebi_bytes(100)
    assert MemorySize.parse("64 kb").get_bytes() == 65536 and str(MemorySize.parse("2g")) == "2 gb"
    with pytest.raises(InvalidJobError):
        MemorySize.parse("lots")


def test_registered_group_resources_are_kept_and_their_non_enforcement_logged(caplog):
    env = env_of()
    group = SlotSharingGroup.builder("heavy").set_cpu_cores(2.0).set_task_heap_memory_mb(64).build()
    env.register_slot_sharing_group(group)
    assert env.get_slot_sharing_group("heavy") is group
    env.from_collection([1]).map(lambda v: v).slot_sharing_group("heavy").print()
    with caplog.at_level("WARNING"):
        env.execute()
    assert "not enforced" in caplog.text and "heavy" in caplog.text


# -- what PyFlink refuses on a KeyedStream --------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.shuffle(),
        lambda k: k.rebalance(),
        lambda k: k.rescale(),
        lambda k: k.forward(),
        lambda k: k.broadcast(),
        lambda k: k.partition_custom(lambda key, n: 0, lambda v: v),
    ],
)
def test_keyed_stream_partitioning_cannot_be_overridden(call):
    keyed = env_of().from_collection([1]).key_by(lambda v: v)
    with pytest.raises(InvalidJobError, match="Cannot override partitioning for KeyedStream"):
        call(keyed)


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.name("x"),
        lambda k: k.get_name(),
        lambda k: k.uid("x"),
        lambda k: k.set_uid_hash("x"),
        lambda k: k.set_parallelism(2),
        lambda k: k.set_max_parallelism(2),
        lambda k: k.force_non_parallel(),
        lambda k: k.set_buffer_timeout(1),
        lambda k: k.start_new_chain(),
        lambda k: k.disable_chaining(),
        lambda k: k.slot_sharing_group("g"),
    ],
)
def test_keyed_stream_is_not_an_operator(call):
    keyed = env_of().from_collection([1]).key_by(lambda v: v)
    with pytest.raises(InvalidJobError, match="for KeyedStream is not supported"):
        call(keyed)


def test_keyed_stream_union_and_print_go_through_its_values():
    env = env_of()
    ds = env.from_collection([1, 2], type_info=Types.INT())
    keyed = ds.key_by(lambda v: v % 2)
    assert keyed.union(ds).get_type() == Types.INT()
