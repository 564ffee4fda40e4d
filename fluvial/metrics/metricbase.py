"""PyFlink's metrics API (`pyflink.metrics`): the MetricGroup a function gets from
`runtime_context.get_metrics_group()`, and what it registers there — Counter, Meter, Distribution and gauges.

Flink's rules, kept:
- A group is a place in a scope hierarchy. `add_group(name)` adds a sub-group; `add_group(key, value)` adds a
  key group with a value group under it, returns the value group and defines the variable `<key>` = value
  (Prometheus turns it into a label). Asking for a group that exists returns it.
- A name registered again in the same group returns the metric registered first (PyFlink hands back the same
  Beam cell); asking for it as another kind of metric is an error naming both kinds.
- A function's metrics live in the scope of its operator:
  `<host>.taskmanager.<tm_id>.<job_name>.<operator_name>.<subtask_index>`.

Cost: user code updates a metric with a Python attribute add on the task thread. Nothing reads a metric until
the task takes its periodic snapshot (`fluvial.runtime.task_metrics`), so an update costs nothing more.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from typing import Any

from fluvial.common.errors import InvalidJobError


class Metric:
    """Base of every metric (PyFlink's `Metric`)."""

    __slots__ = ()


class Counter(Metric):
    """A count that user code increments and decrements (Flink's `SimpleCounter`)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        """Add `n` to the count.

        Args:
            n: How much.
        """
        self.count += n

    def dec(self, n: int = 1) -> None:
        """Subtract `n` from the count.

        Args:
            n: How much.
        """
        self.count -= n

    def get_count(self) -> int:
        """The current count."""
        return self.count


class Meter(Metric):
    """Events and their rate (Flink's `MeterView`): `mark_event(n)` counts; the rate is events per second over
    the last `time_span_in_seconds`, brought up to date each time the task takes a metrics snapshot."""

    __slots__ = ("count", "time_span_in_seconds", "rate")

    def __init__(self, time_span_in_seconds: int = 60) -> None:
        if (
            isinstance(time_span_in_seconds, bool)
            or not isinstance(time_span_in_seconds, int)
            or time_span_in_seconds < 1
        ):
            raise InvalidJobError(
                f"a meter's time span must be an integer number of seconds >= 1, got {time_span_in_seconds!r}"
            )
        self.count = 0
        self.time_span_in_seconds = time_span_in_seconds
        self.rate = 0.0

    def mark_event(self, value: int = 1) -> None:
        """Record `value` events now.

        Args:
            value: How many.
        """
        self.count += value

    def get_count(self) -> int:
        """Events recorded in all."""
        return self.count

    def get_rate(self) -> float:
        """Events per second over the meter's time span."""
        return self.rate


class Distribution(Metric):
    """Statistics of the values user code reports (PyFlink's `Distribution`, Beam's): count, sum, min, max and
    mean. Reported as five numbers: `<name>_count`, `_sum`, `_min`, `_max` and `_mean`."""

    __slots__ = ("count", "sum", "min", "max")

    def __init__(self) -> None:
        self.count = 0
        self.sum: float = 0
        self.min: float | None = None
        self.max: float | None = None

    def update(self, value: float) -> None:
        """Record one value.

        Args:
            value: The value.
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidJobError(f"Distribution.update takes a number, got {value!r}")
        self.count += 1
        self.sum += value
        if self.min is None or value < self.min:
            self.min = value
        if self.max is None or value > self.max:
            self.max = value

    def get_count(self) -> int:
        """How many values were recorded."""
        return self.count

    def get_sum(self) -> float:
        """The sum of the values."""
        return self.sum

    def get_min(self) -> float | None:
        """The smallest value, or None before the first."""
        return self.min

    def get_max(self) -> float | None:
        """The largest value, or None before the first."""
        return self.max

    def get_mean(self) -> float | None:
        """The mean of the values, or None before the first."""
        return self.sum / self.count if self.count else None


class Gauge(Metric):
    """A value read when metrics are reported: `obj()` of `group.gauge(name, obj)`, called on the task thread at
    each snapshot. A number is reported as it is; a gauge that raises or returns something else is reported
    as missing, and the problem is logged once."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[[], Any]) -> None:
        if not callable(function):
            raise InvalidJobError(f"a gauge needs a function returning its value, got {function!r}")
        self.function = function

    def get_value(self) -> Any:
        return self.function()


class MetricKind(enum.Enum):
    COUNTER = "counter"
    METER = "meter"
    DISTRIBUTION = "distribution"
    GAUGE = "gauge"


_KIND_OF = {
    Counter: MetricKind.COUNTER,
    Meter: MetricKind.METER,
    Distribution: MetricKind.DISTRIBUTION,
    Gauge: MetricKind.GAUGE,
}


class UserMetricKey:
    """Where a user metric sits below its operator.

    `path`: the group names down to the metric, value groups included (its identifier, as Flink's REST API and
    `get_metric_identifier` spell it); `logical_path`: the same without value groups (what Prometheus names it
    by, as Flink's logical scope); `variables`: the `<key>` → value pairs of its key/value groups."""

    __slots__ = ("path", "logical_path", "variables", "name")

    def __init__(
        self, path: tuple[str, ...], logical_path: tuple[str, ...], variables: tuple[tuple[str, str], ...], name: str
    ) -> None:
        self.path = path
        self.logical_path = logical_path
        self.variables = variables
        self.name = name

    @property
    def identifier(self) -> str:
        return ".".join((*self.path, self.name))

    @property
    def logical_name(self) -> str:
        return ".".join((*self.logical_path, self.name))


class UserMetrics:
    """The metrics user functions registered in one operator, by identifier, in registration order."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[UserMetricKey, Metric]] = {}

    def register(self, key: UserMetricKey, metric: Metric) -> Metric:
        existing = self.entries.get(key.identifier)
        if existing is None:
            self.entries[key.identifier] = (key, metric)
            return metric
        previous = existing[1]
        if type(previous) is not type(metric):
            raise InvalidJobError(
                f"metric '{key.identifier}' is already registered as a {_KIND_OF[type(previous)].value}; it cannot "
                f"also be a {_KIND_OF[type(metric)].value}: give the new metric another name"
            )
        if isinstance(metric, Gauge) and isinstance(previous, Gauge):  # (the same type: checked above)
            previous.function = metric.function  # the newest function is read
        return previous


class MetricGroup(abc.ABC):
    """A named container for metrics and further groups (PyFlink's `MetricGroup`)."""

    @abc.abstractmethod
    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """A sub-group `name`; with `extra`, a key group `name` holding a value group `extra` (returned), which
        defines the variable `<name>` = `extra`."""

    @abc.abstractmethod
    def counter(self, name: str) -> Counter:
        """Register a counter in this group.

        Args:
            name: Its name.

        Returns:
            The Counter.

        Example:
            ```python
            self.errors = runtime_context.get_metrics_group().counter("errors")
            ```
        """

    @abc.abstractmethod
    def gauge(self, name: str, obj: Callable[[], Any]) -> None:
        """Register a gauge: a value read from `obj()` whenever metrics are reported.

        Args:
            name: Its name.
            obj: A callable returning the current value (a number).
        """

    @abc.abstractmethod
    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        """Register a meter (events per second) in this group.

        Args:
            name: Its name.
            time_span_in_seconds: The span its rate is averaged over.

        Returns:
            The Meter.
        """

    @abc.abstractmethod
    def distribution(self, name: str) -> Distribution:
        """Register a distribution (count, sum, min, max, mean of values) in this group.

        Args:
            name: Its name.

        Returns:
            The Distribution.
        """

    @abc.abstractmethod
    def get_scope_components(self) -> list[str]:
        """The scope as its components, e.g. `['localhost', 'taskmanager', 'tm-0', 'job', 'Map', '0']`."""

    @abc.abstractmethod
    def get_all_variables(self) -> dict[str, str]:
        """Every variable and its value, e.g. `{'<host>': 'localhost', '<subtask_index>': '0'}`."""

    @abc.abstractmethod
    def get_metric_identifier(self, metric_name: str) -> str:
        """The fully qualified name of `metric_name` in this group: the scope components and the name, by '.'."""


class _GroupType(enum.Enum):
    GENERIC = "generic"
    KEY = "key"
    VALUE = "value"


class GenericMetricGroup(MetricGroup):
    """A group below an operator's scope; every metric registered through it lands in the operator's
    UserMetrics. `scope` and `variables` are the operator's (see the module docstring)."""

    def __init__(
        self,
        registry: UserMetrics,
        scope: tuple[str, ...],
        variables: dict[str, str],
        path: tuple[str, ...] = (),
        logical_path: tuple[str, ...] = (),
        user_variables: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._registry = registry
        self._scope = scope
        self._variables = variables
        self._path = path
        self._logical_path = logical_path
        self._user_variables = user_variables
        self._children: dict[tuple[str, _GroupType], GenericMetricGroup] = {}

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        _check_name(name, "group")
        if extra is None:
            return self._child(name, _GroupType.GENERIC)
        _check_name(extra, "value group")
        return self._child(name, _GroupType.KEY)._child(extra, _GroupType.VALUE)

    def _child(self, name: str, kind: _GroupType) -> GenericMetricGroup:
        child = self._children.get((name, kind))
        if child is None:
            if kind is _GroupType.VALUE:
                key = self._path[-1]
                child = GenericMetricGroup(
                    self._registry,
                    self._scope,
                    self._variables,
                    (*self._path, name),
                    self._logical_path,
                    (*self._user_variables, (f"<{key}>", name)),
                )
            else:
                child = GenericMetricGroup(
                    self._registry,
                    self._scope,
                    self._variables,
                    (*self._path, name),
                    (*self._logical_path, name),
                    self._user_variables,
                )
            self._children[(name, kind)] = child
        return child

    def _register(self, name: str, metric: Metric) -> Any:
        _check_name(name, "metric")
        key = UserMetricKey(self._path, self._logical_path, self._user_variables, name)
        return self._registry.register(key, metric)

    def counter(self, name: str) -> Counter:
        return self._register(name, Counter())

    def gauge(self, name: str, obj: Callable[[], Any]) -> None:
        self._register(name, Gauge(obj))

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self._register(name, Meter(time_span_in_seconds))

    def distribution(self, name: str) -> Distribution:
        return self._register(name, Distribution())

    def get_scope_components(self) -> list[str]:
        return [*self._scope, *self._path]

    def get_all_variables(self) -> dict[str, str]:
        return {**self._variables, **dict(self._user_variables)}

    def get_metric_identifier(self, metric_name: str) -> str:
        return ".".join((*self._scope, *self._path, metric_name))


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidJobError(f"a {what} name must be a non-empty string, got {name!r}")
