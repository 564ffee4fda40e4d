"""Common classes of the user API (PyFlink `pyflink.common`).

Names load on first use (PEP 562): importing one engine module must not pay for the whole API, since
start-up time is part of every small job's latency.
"""

from __future__ import annotations

from fluvial.common.lazy_names import lazy_names

_EXPORTS = {
    "AssignerWithPeriodicWatermarksWrapper": "fluvial.common.watermark_strategy",
    "ByteArraySchema": "fluvial.common.serialization",
    "CompletableFuture": "fluvial.common.completable_future",
    "ConfigOption": "fluvial.common.config_options",
    "ConfigOptions": "fluvial.common.config_options",
    "DeserializationSchema": "fluvial.common.serialization",
    "InputDependencyConstraint": "fluvial.common.input_dependency_constraint",
    "Instant": "fluvial.common.time",
    "RestartStrategyConfiguration": "fluvial.common.restart_strategy",
    "SerializationSchema": "fluvial.common.serialization",
    "SimpleStringSchema": "fluvial.common.serialization",
    "TypeInformation": "fluvial.common.typeinfo",
    "TypeSerializer": "fluvial.common.serializer",
    "Configuration": "fluvial.common.configuration",
    "Duration": "fluvial.common.time",
    "Encoder": "fluvial.common.encoder",
    "ExecutionConfig": "fluvial.common.execution_config",
    "JobClient": "fluvial.common.job_client",
    "JobExecutionResult": "fluvial.common.job_execution_result",
    "JobID": "fluvial.common.job_id",
    "JobStatus": "fluvial.common.job_status",
    "RestartStrategies": "fluvial.common.restart_strategy",
    "WatermarkStrategy": "fluvial.common.watermark_strategy",
    "Row": "fluvial.common.row",
    "RowKind": "fluvial.common.row",
    "Time": "fluvial.common.time",
    "Types": "fluvial.common.typeinfo",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__
