"""fluvial.metrics (PyFlink's `pyflink.metrics`): the metric group user functions register metrics in, and the
metrics themselves. System metrics (Flink's names) are counted by the runtime and reported with them."""

from fluvial.metrics.metricbase import Counter, Distribution, Gauge, Meter, Metric, MetricGroup

__all__ = ["Counter", "Distribution", "Gauge", "Meter", "Metric", "MetricGroup"]
