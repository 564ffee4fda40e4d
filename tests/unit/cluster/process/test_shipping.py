"""Checks before a job goes to TaskManagers in other processes: functions that cannot travel, and memory://
locations (a file system inside one process), are refused at submission with the fix."""

from __future__ import annotations

import threading

import pytest

from fluvial.cluster.code_shipping import prepare_for_shipping
from fluvial.common import Configuration, Encoder
from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_source import FileSource, StreamFormat
from fluvial.datastream.connectors.file_system import FileSink
from fluvial.datastream.connectors.hybrid_source import HybridSource


def environment(**keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration()
    for key, value in keys.items():
        configuration.set_string(key, value)
    return StreamExecutionEnvironment.get_execution_environment(configuration)


def text_source(path: str) -> FileSource:
    return FileSource.for_record_stream_format(StreamFormat.text_line_format(), path).build()


def file_sink(path: str) -> FileSink:
    return FileSink.for_row_format(path, Encoder.simple_string_encoder()).build()


def refused(env: StreamExecutionEnvironment, what: str) -> None:
    with pytest.raises(
        ConfigurationError,
        match=rf"{what} '[^']*memory://[^']*' is in memory://.*"
        r"local.taskmanager.mode: thread",
    ):
        prepare_for_shipping(env.get_job_graph())


def test_a_memory_sink_is_refused_naming_the_sink(tmp_path):
    env = environment()
    env.from_collection([1, 2]).map(str).sink_to(file_sink("memory://out")).name("results")
    refused(env, "the path of operator 'results'")


def test_a_memory_source_is_refused_also_inside_a_hybrid_source(tmp_path):
    (tmp_path / "first.txt").write_text("a\n")
    env = environment()
    hybrid = (
        HybridSource.builder(text_source(str(tmp_path / "first.txt")))
        .add_source(text_source("memory://second.txt"))
        .build()
    )
    env.from_source(hybrid, source_name="both").print()
    refused(env, "the path of operator 'Source: both'")


@pytest.mark.parametrize(
    "keys, storage, what",
    [
        ({}, FileSystemCheckpointStorage("memory://chk"), "the checkpoint storage"),
        (
            {"execution.savepoint.path": "memory://savepoints/savepoint-1"},
            None,
            r"the savepoint to restore \(execution.savepoint.path\)",
        ),
        ({"state.savepoints.dir": "memory://savepoints"}, None, "state.savepoints.dir"),
    ],
)
def test_memory_checkpoint_and_savepoint_locations_are_refused(keys, storage, what):
    env = environment(**keys)
    if storage is not None:
        env.enable_checkpointing(100)
        env.get_checkpoint_config().set_checkpoint_storage(storage)
    env.from_collection([1]).print()
    refused(env, what)


def test_local_paths_and_object_store_urls_pass(tmp_path):
    (tmp_path / "in.txt").write_text("a\n")
    env = environment(**{"state.savepoints.dir": "s3://bucket/savepoints"})
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}"))
    env.from_source(text_source(str(tmp_path / "in.txt")), source_name="lines").sink_to(
        file_sink(str(tmp_path / "out"))
    )
    prepare_for_shipping(env.get_job_graph())


def test_a_function_that_cannot_travel_is_refused_naming_the_operator_and_the_fix():
    class HoldsALock:
        def __init__(self) -> None:
            self.lock = threading.Lock()

        def __call__(self, value):
            return value

    env = environment()
    env.from_collection([1]).map(HoldsALock()).name("locked").print()
    with pytest.raises(InvalidJobError, match=r"operator 'locked' cannot be sent to a TaskManager process.*open\(\)"):
        prepare_for_shipping(env.get_job_graph())


def test_an_unpicklable_closure_names_the_captured_variable_not_a_wrapper():
    from fluvial.common.typeinfo import Types

    connection = threading.Lock()
    env = environment()
    env.from_collection([1]).map(lambda value: (connection, value)[1], output_type=Types.INT()).print()
    with pytest.raises(InvalidJobError) as refused_job:
        prepare_for_shipping(env.get_job_graph())
    message = str(refused_job.value)
    assert "the variable 'connection' (_thread.lock), which the function " in message and "<lambda>" in message
    assert "_inner" not in message and "TypedFunction" not in message and "MapSpec" not in message
    assert refused_job.value.__cause__ is None and refused_job.value.__suppress_context__  # no cloudpickle frames


def test_an_unpicklable_attribute_of_the_users_function_is_named():
    class Enrich:
        def __init__(self) -> None:
            self.client = threading.Lock()

        def __call__(self, value):
            return value

    env = environment()
    env.from_collection([1]).map(Enrich()).print()
    with pytest.raises(InvalidJobError, match=r"the attribute .*Enrich\.client \(_thread\.lock\) cannot be pickled"):
        prepare_for_shipping(env.get_job_graph())
