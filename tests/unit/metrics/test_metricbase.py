"""PyFlink's metrics API: groups in a scope hierarchy with key/value variables, and the metrics registered in
them (one metric per name and group, of one kind)."""

from __future__ import annotations

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.metrics import Counter, Distribution, Meter, MetricGroup
from fluvial.metrics.metricbase import GenericMetricGroup, UserMetrics

SCOPE = ("host-7", "taskmanager", "tm-2", "word_count", "my-mapper", "0")


def _group() -> tuple[GenericMetricGroup, UserMetrics]:
    registry = UserMetrics()
    return GenericMetricGroup(registry, SCOPE, {"<host>": "host-7"}), registry


def test_a_sub_group_extends_the_scope_and_keeps_the_variables():
    group, _ = _group()
    sub = group.add_group("my_group")
    assert isinstance(sub, MetricGroup)
    assert sub.get_scope_components() == [*SCOPE, "my_group"]
    assert sub.get_all_variables() == {"<host>": "host-7"}
    assert sub.get_metric_identifier("my_metric") == "host-7.taskmanager.tm-2.word_count.my-mapper.0.my_group.my_metric"
    assert group.add_group("my_group") is sub, "asking again returns the group that exists"


def test_a_key_value_group_defines_a_variable_and_names_metrics_by_the_key_only():
    group, registry = _group()
    value_group = group.add_group("my_key", "my_value")
    assert value_group.get_all_variables() == {"<host>": "host-7", "<my_key>": "my_value"}
    assert value_group.get_scope_components() == [*SCOPE, "my_key", "my_value"]
    value_group.counter("hits").inc()
    ((key, _),) = registry.entries.values()
    assert key.identifier == "my_key.my_value.hits"
    assert key.logical_name == "my_key.hits"
    assert key.variables == (("<my_key>", "my_value"),)


def test_counter_meter_distribution_and_gauge_count_what_they_are_told():
    group, registry = _group()
    counter = group.counter("c")
    counter.inc()
    counter.inc(5)
    counter.dec(2)
    assert counter.get_count() == 4
    meter = group.meter("m", time_span_in_seconds=10)
    meter.mark_event()
    meter.mark_event(3)
    assert meter.get_count() == 4 and meter.time_span_in_seconds == 10
    distribution = group.distribution("d")
    for value in (4, 1, 7):
        distribution.update(value)
    assert (distribution.get_count(), distribution.get_sum(), distribution.get_min(), distribution.get_max()) == (
        3,
        12,
        1,
        7,
    )
    assert distribution.get_mean() == 4
    group.gauge("g", lambda: 42)
    assert [key.name for key, _ in registry.entries.values()] == ["c", "m", "d", "g"]


def test_a_name_registered_again_returns_the_first_metric_and_another_kind_is_refused():
    group, _ = _group()
    first = group.counter("records")
    assert group.counter("records") is first
    with pytest.raises(
        InvalidJobError, match="'records' is already registered as a counter; it cannot also be a meter"
    ):
        group.meter("records")
    assert group.add_group("a").counter("records") is not first, "another group is another place"


@pytest.mark.parametrize("bad", ["", "  ", None, 3])
def test_names_must_be_non_empty_strings(bad):
    group, _ = _group()
    with pytest.raises(InvalidJobError, match="name must be a non-empty string"):
        group.counter(bad)
    with pytest.raises(InvalidJobError, match="name must be a non-empty string"):
        group.add_group(bad)


def test_bad_values_are_refused_with_the_fix():
    group, _ = _group()
    with pytest.raises(InvalidJobError, match="time span must be an integer number of seconds"):
        group.meter("m", time_span_in_seconds=0)
    with pytest.raises(InvalidJobError, match="Distribution.update takes a number"):
        group.distribution("d").update("7")
    with pytest.raises(InvalidJobError, match="needs a function"):
        group.gauge("g", 42)


def test_the_metric_classes_are_pyflinks():
    assert issubclass(Counter, object) and Meter().get_count() == 0 and Distribution().get_mean() is None
