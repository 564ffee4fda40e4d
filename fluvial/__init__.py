"""fluvial: a stream processing engine with Flink's semantics and PyFlink's DataStream API, in Python."""

__version__ = "0.1.0"
