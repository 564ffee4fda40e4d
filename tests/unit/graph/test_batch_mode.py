"""BATCH execution mode as the compiler applies it: which operator descriptions change, and how, and when the
environment decides a job runs as a batch job."""

from __future__ import annotations

import logging

import pytest

from fluvial.common import Duration, WatermarkStrategy
from fluvial.common.errors import InvalidJobError
from fluvial.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from fluvial.datastream import transformations as t
from fluvial.graph.batch_mode import BatchTimestamps, for_batch
from fluvial.testing import ScriptedSource


class Output:
    def __init__(self) -> None:
        self.watermarks = []

    def emit_watermark(self, watermark):
        self.watermarks.append(watermark.timestamp)

    def mark_idle(self):
        pass

    def mark_active(self):
        pass


def test_a_batch_strategy_keeps_the_assigner_and_drops_the_generator():
    strategy = (
        WatermarkStrategy.for_monotonous_timestamps()
        .with_idleness(Duration.of_seconds(1))
        .with_timestamp_assigner(lambda value, previous: value * 10)
    )
    batch = BatchTimestamps(strategy)
    generator, output = batch.create_watermark_generator(), Output()
    generator.on_event("x", 100, output)
    generator.on_periodic_emit(output)
    assert output.watermarks == [] and batch.idle_timeout_ms is None
    assert batch.create_timestamp_assigner()(4, None) == 40


def test_for_batch_marks_every_operator_and_rewrites_watermark_strategies():
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    source = for_batch(t.SourceSpec(object(), watermark_strategy=strategy))
    assert source.batch and isinstance(source.watermark_strategy, BatchTimestamps)
    assert source.watermark_strategy.strategy is strategy
    assigner = for_batch(t.TimestampsAndWatermarksSpec(strategy))
    assert assigner.batch and isinstance(assigner.function, BatchTimestamps)
    function = object()
    reduce = for_batch(t.KeyedReduceSpec(function, len))
    assert type(reduce) is t.KeyedReduceSpec and reduce.batch and reduce.function is function
    assert reduce.key_selector is len and not t.KeyedReduceSpec(function).batch
    plain = for_batch(t.SourceSpec(object()))
    assert plain.batch and plain.watermark_strategy is None


def _reduce_job(env, source=None):
    stream = env.from_source(source) if source is not None else env.from_collection(["a", "b"])
    stream.key_by(lambda v: v).reduce(lambda a, b: a).print()
    return env


def _graph_is_batch(env) -> bool:
    graph = env.get_stream_graph()
    return all(node.operator.batch for node in graph.nodes.values())


def test_streaming_is_the_default_and_automatic_follows_the_sources():
    env = StreamExecutionEnvironment.get_execution_environment()
    graph = _reduce_job(env).get_stream_graph()
    assert not any(node.operator.batch for node in graph.nodes.values())
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
    assert _graph_is_batch(_reduce_job(env))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
    graph = _reduce_job(env, ScriptedSource([1], unbounded=True)).get_stream_graph()
    assert not any(node.operator.batch for node in graph.nodes.values())


def test_batch_with_an_unbounded_source_is_refused_naming_it():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.get_configuration().set_string("execution.runtime-mode", "BATCH")
    _reduce_job(env, ScriptedSource([1], unbounded=True))
    with pytest.raises(InvalidJobError, match="'Source: Scripted Source' is unbounded.*STREAMING"):
        env.execute()


def test_batch_jobs_take_no_checkpoints_and_say_so(caplog):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.enable_checkpointing(100)
    _reduce_job(env)
    with caplog.at_level(logging.INFO, logger="fluvial.datastream.stream_execution_environment"):
        pipeline = env._pipeline()
    assert pipeline.batch and not pipeline.fault_tolerance.checkpoints.enabled
    assert "takes no checkpoints" in caplog.text
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(100)
    _reduce_job(env)
    assert env._pipeline().fault_tolerance.checkpoints.enabled
