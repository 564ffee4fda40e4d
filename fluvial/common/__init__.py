"""Common classes of the user API (PyFlink `pyflink.common`)."""

from fluvial.common.configuration import Configuration
from fluvial.common.encoder import Encoder
from fluvial.common.execution_config import ExecutionConfig
from fluvial.common.job_execution_result import JobExecutionResult
from fluvial.common.row import Row, RowKind
from fluvial.common.time import Duration, Time
from fluvial.common.typeinfo import Types

__all__ = [
    "Configuration",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "JobExecutionResult",
    "Row",
    "RowKind",
    "Time",
    "Types",
]
