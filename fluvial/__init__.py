"""fluvial: a stream processing engine with Flink's semantics and PyFlink's DataStream API, in Python."""

__version__ = "0.1.0"

from fluvial.common import logs as _logs  # noqa: E402 - after the version, which the logs module does not need

_logs.install()  # fluvial's records go to its log files, and to the program's logging from WARNING on
