"""Accumulators with retraction: MIN/MAX find the next extreme, SUM of nothing is NULL, DISTINCT counts."""

from __future__ import annotations

from fluvial.table.planner.rex import AggCall
from fluvial.table.runtime.aggregators import AggregateSet
from fluvial.table.types import DataTypes


def test_max_with_retraction_falls_back_to_the_next_largest():
    aggs = AggregateSet([AggCall("MAX", (0,), DataTypes.INT(), "m")])
    state = aggs.create()
    for v in (3, 9, 9, 5):
        aggs.accumulate(state, [v])
    aggs.retract(state, [9])
    assert aggs.values(state) == [9]
    aggs.retract(state, [9])
    assert aggs.values(state) == [5]


def test_sum_is_null_without_values_and_sum0_is_zero():
    aggs = AggregateSet([AggCall("SUM", (0,), DataTypes.INT(), "s"), AggCall("SUM0", (0,), DataTypes.INT(), "z")])
    state = aggs.create()
    aggs.accumulate(state, [None])
    assert aggs.values(state) == [None, 0]


def test_count_distinct_counts_a_value_once_until_its_last_retraction():
    aggs = AggregateSet([AggCall("COUNT", (0,), DataTypes.BIGINT(False), "c", distinct=True)])
    state = aggs.create()
    for v in ("a", "a", "b"):
        aggs.accumulate(state, [v])
    assert aggs.values(state) == [2]
    aggs.retract(state, ["a"])
    assert aggs.values(state) == [2]
    aggs.retract(state, ["a"])
    assert aggs.values(state) == [1]


def test_avg_of_integers_truncates_as_flinks():
    aggs = AggregateSet([AggCall("AVG", (0,), DataTypes.INT(), "a")])
    state = aggs.create()
    for v in (1, 2):
        aggs.accumulate(state, [v])
    assert aggs.values(state) == [1]
