"""execute_and_collect as PyFlink's tests use it: the collect sink is one subtask (as Flink's), so what one
upstream subtask sends arrives in order, and `limit=N` returns the first N records in source order."""

from __future__ import annotations

import pytest

from fluvial.common import Types
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import environment, execution_modes

WORDS = ["pyflink", "datastream", "execute", "collect"]


def env_of(mode):
    env = environment(mode)
    env.set_parallelism(2)
    return env


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_limit_returns_the_first_records_in_source_order(mode):
    env = env_of(mode)
    assert env.from_collection(WORDS).execute_and_collect(limit=3) == WORDS[:3]
    with env.from_collection(WORDS, type_info=Types.STRING()).execute_and_collect() as results:
        assert list(results) == WORDS
    pairs = [("pyflink", 1), ("datastream", 2), ("pyflink", 1), ("collect", 2)]
    keyed = env.from_collection(pairs).key_by(lambda pair: pair[0])
    assert keyed.execute_and_collect(limit=4) == pairs


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_the_collect_sink_is_one_subtask_behind_a_parallel_operator(mode):
    env = env_of(mode)
    doubled = env.from_source(NumberSequenceSource(1, 1000)).map(lambda v: v * 2)
    assert sorted(doubled.execute_and_collect()) == list(range(2, 2001, 2))
    env._add_collect_sink(doubled, "plan-only")
    sinks = [vertex for vertex in env.get_job_graph().vertices if "Collect Sink" in vertex.name]
    assert [(vertex.name, vertex.parallelism) for vertex in sinks] == [("Collect Sink", 1)]
