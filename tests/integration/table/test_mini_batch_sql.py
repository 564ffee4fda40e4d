"""Mini-batch and two-phase GROUP BY end to end: the plan `explain` shows, the same final table as one phase
(over NULLs and an updating input), fewer changes, the fallback to one phase, and the options' errors."""

from __future__ import annotations

from collections import Counter

import pytest

from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment, ValidationException
from fluvial.table.udf import AggregateFunction, udaf

pytestmark = pytest.mark.timeout(90)

MINI_BATCH = {
    "table.exec.mini-batch.enabled": "true",
    "table.exec.mini-batch.allow-latency": "5 s",
    "table.exec.mini-batch.size": "4",
}
# a GROUP BY over a GROUP BY: the outer one aggregates an updating input (retractions)
QUERY = """
SELECT cnt, COUNT(*) AS words, SUM(total) AS total, MIN(lo) AS lo, MAX(hi) AS hi, AVG(total) AS mean
FROM (SELECT word, COUNT(*) AS cnt, SUM(n) AS total, MIN(n) AS lo, MAX(n) AS hi FROM words GROUP BY word)
GROUP BY cnt
"""
WORDS = [("a", 1), ("b", None), ("a", 3), ("c", 2), ("b", 4), ("a", None), ("d", 7), ("c", 5), ("e", None)]


def environment(options: dict[str, str]) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    for key, value in options.items():
        t_env.get_config().set(key, value)
    words = t_env.from_elements(
        WORDS, DataTypes.ROW([DataTypes.FIELD("word", DataTypes.STRING()), DataTypes.FIELD("n", DataTypes.INT())])
    )
    t_env.create_temporary_view("words", words)
    return t_env


def changelog(t_env: TableEnvironment) -> list[tuple]:
    with t_env.execute_sql(QUERY).collect() as result:
        return [(r.get_row_kind().short_string(), *r) for r in result]


def final_table(changes: list[tuple]) -> Counter:
    table: Counter = Counter()
    for kind, *values in changes:
        table[tuple(values)] += 1 if kind in ("+I", "+U") else -1
    return +table


def test_one_phase_mini_batch_and_two_phase_end_in_the_same_table():
    one_phase = changelog(environment({}))
    mini_batch = changelog(environment({**MINI_BATCH, "table.optimizer.agg-phase-strategy": "ONE_PHASE"}))
    two_phase = changelog(environment(MINI_BATCH))
    expected = final_table(one_phase)
    assert expected == Counter({(1, 2, 7, 7, 7, 7): 1, (2, 2, 11, 2, 5, 5): 1, (3, 1, 4, 1, 3, 4): 1})
    assert final_table(mini_batch) == expected
    assert final_table(two_phase) == expected
    assert len(mini_batch) < len(one_phase)  # one change per key and batch


def test_explain_shows_the_mini_batch_and_the_two_phases():
    two_phase = environment(MINI_BATCH).explain_sql(QUERY)
    plan = two_phase.split("== Optimized Physical Plan ==")[1].split("== fluvial JobGraph ==")[0]
    assert "GlobalGroupAggregate(groupBy=[cnt], select=[cnt, COUNT(count$0) AS words" in plan
    assert "LocalGroupAggregate(groupBy=[cnt], select=[cnt, COUNT(*) AS count$0" in plan
    assert "MiniBatchAssigner(interval=[5000ms], mode=[ProcTime])" in plan
    assert "LocalGroupAggregate" in two_phase.split("== fluvial JobGraph ==")[1]
    one_phase = environment({**MINI_BATCH, "table.optimizer.agg-phase-strategy": "ONE_PHASE"}).explain_sql(QUERY)
    assert "MiniBatchAssigner" in one_phase and "LocalGroupAggregate" not in one_phase
    assert "MiniBatchAssigner" not in environment({}).explain_sql(QUERY)


class Concat(AggregateFunction):
    """A udaf without merge: cannot run in two phases."""

    def create_accumulator(self):
        return []

    def accumulate(self, accumulator, value):
        accumulator.append(value)

    def get_value(self, accumulator):
        return "".join(accumulator)


def test_an_aggregate_without_merge_falls_back_to_one_phase():
    t_env = environment({**MINI_BATCH, "table.optimizer.agg-phase-strategy": "TWO_PHASE"})
    t_env.create_temporary_function("glue", udaf(Concat(), result_type=DataTypes.STRING()))
    plan = t_env.explain_sql("SELECT n, glue(word) FROM words GROUP BY n")
    assert "GroupAggregate(groupBy=[n]" in plan and "LocalGroupAggregate" not in plan
    distinct = t_env.explain_sql("SELECT n, COUNT(DISTINCT word) FROM words GROUP BY n")
    assert "LocalGroupAggregate" not in distinct


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"table.exec.mini-batch.enabled": "true"}, "MiniBatch Latency must be greater than 0 ms"),
        (
            {"table.exec.mini-batch.enabled": "true", "table.exec.mini-batch.allow-latency": "1 s"},
            "'table.exec.mini-batch.size' , default: -1 must be > 0",
        ),
    ],
)
def test_mini_batch_needs_allow_latency_and_size(options, message):
    with pytest.raises(ValidationException, match=message):
        environment(options).explain_sql(QUERY)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("table.exec.mini-batch.enabled", "yes"),
        ("table.exec.mini-batch.allow-latency", "soon"),
        ("table.exec.mini-batch.size", "many"),
        ("table.optimizer.agg-phase-strategy", "THREE_PHASE"),
    ],
)
def test_a_bad_option_value_is_refused_when_set(key, value):
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    with pytest.raises(ValidationException, match="Could not parse value"):
        t_env.get_config().set(key, value)
