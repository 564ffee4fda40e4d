"""`EnvironmentSettings` and `TableConfig` (PyFlink's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.planner.async_scalar import ASYNC_SCALAR_OPTIONS, check_async_scalar_option

__all__ = ["EnvironmentSettings", "TableConfig", "parse_duration_millis", "TABLE_OPTIONS"]


@dataclass(frozen=True)
class EnvironmentSettings:
    streaming: bool = True
    configuration: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def in_streaming_mode() -> EnvironmentSettings:
        return EnvironmentSettings(True)

    @staticmethod
    def in_batch_mode() -> EnvironmentSettings:
        return EnvironmentSettings(False)

    @staticmethod
    def new_instance() -> EnvironmentSettings.Builder:
        return EnvironmentSettings.Builder()

    def is_streaming_mode(self) -> bool:
        return self.streaming

    def get_configuration(self) -> dict[str, str]:
        return dict(self.configuration)

    class Builder:
        def __init__(self) -> None:
            self._streaming = True
            self._configuration: dict[str, str] = {}

        def in_streaming_mode(self) -> EnvironmentSettings.Builder:
            self._streaming = True
            return self

        def in_batch_mode(self) -> EnvironmentSettings.Builder:
            self._streaming = False
            return self

        def with_configuration(self, configuration: Any) -> EnvironmentSettings.Builder:
            self._configuration.update(configuration.to_dict() if hasattr(configuration, "to_dict") else configuration)
            return self

        def with_built_in_catalog_name(self, name: str) -> EnvironmentSettings.Builder:
            return self

        def with_built_in_database_name(self, name: str) -> EnvironmentSettings.Builder:
            return self

        def build(self) -> EnvironmentSettings:
            return EnvironmentSettings(self._streaming, dict(self._configuration))


# The table.* keys fluvial implements; any other table.* key is refused rather than ignored.
TABLE_OPTIONS = {
    "table.exec.state.ttl": "idle state retention of GROUP BY aggregations and deduplications (e.g. '1 h')",
    "table.local-time-zone": "the session time zone; fluvial supports UTC only",
    "table.dml-sync": "whether execute_sql of an INSERT waits for the job to end",
    "table.display.max-column-width": "tableau column width",
    "table.exec.mini-batch.enabled": "buffer GROUP BY input and fold it per key and batch (needs allow-latency and size)",
    "table.exec.mini-batch.allow-latency": "the longest a mini-batch waits before it is folded (e.g. '1 s')",
    "table.exec.mini-batch.size": "the most rows a mini-batch holds before it is folded",
    "table.optimizer.agg-phase-strategy": "AUTO, ONE_PHASE or TWO_PHASE: local-global GROUP BY (with mini-batch)",
    "table.optimizer.source.predicate-pushdown-enabled": "whether WHERE conjuncts are pushed into sources (default true)",
    **ASYNC_SCALAR_OPTIONS,
    "table.exec.sink.upsert-materialize": "AUTO, FORCE or NONE: a SinkUpsertMaterializer before a keyed sink",
    "table.optimizer.distinct-agg.split.enabled": "split COUNT/SUM(DISTINCT x) GROUP BYs in two levels by hash buckets",
    "table.optimizer.distinct-agg.split.bucket-num": "the number of buckets of a split DISTINCT aggregation (1024)",
}


def _check_table_option(key: str, value: str) -> None:
    """The value's form, when set (Flink parses a value when it is set); combinations are checked when a query is
    planned (`aggregate_phases.mini_batch_from`)."""
    check_async_scalar_option(key, value)
    if key in ("table.exec.state.ttl", "table.exec.mini-batch.allow-latency"):
        parse_duration_millis(value)
    elif key == "table.exec.mini-batch.enabled" and value.lower() not in ("true", "false"):
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use true or false")
    elif key == "table.exec.mini-batch.size" and not value.strip().lstrip("-").isdigit():
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use a number of rows, e.g. 5000")
    elif key == "table.optimizer.agg-phase-strategy" and value.upper() not in ("AUTO", "ONE_PHASE", "TWO_PHASE"):
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use AUTO, ONE_PHASE or TWO_PHASE")
    elif key == "table.optimizer.distinct-agg.split.enabled" and value.lower() not in ("true", "false"):
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use true or false")
    elif key == "table.optimizer.distinct-agg.split.bucket-num" and not (value.strip().isdigit() and int(value) > 0):
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use a number of buckets above 0")
    elif key == "table.exec.sink.upsert-materialize" and value.strip().upper() not in ("AUTO", "FORCE", "NONE"):
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use AUTO, FORCE or NONE")


def parse_duration_millis(text: str) -> int:
    """Flink's duration text: `10 s`, `1 h`, `500 ms`, `1min`, or plain milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if match is None:
        raise ValidationException(f"Could not parse value '{text}' as a duration: use e.g. '10 s', '5 min', '1 h'")
    number, unit = int(match.group(1)), match.group(2)
    units = {
        "": 1,
        "ms": 1,
        "milli": 1,
        "millis": 1,
        "s": 1000,
        "sec": 1000,
        "second": 1000,
        "seconds": 1000,
        "min": 60_000,
        "m": 60_000,
        "minute": 60_000,
        "minutes": 60_000,
        "h": 3_600_000,
        "hour": 3_600_000,
        "hours": 3_600_000,
        "d": 86_400_000,
        "day": 86_400_000,
        "days": 86_400_000,
    }
    if unit not in units:
        raise ValidationException(f"Could not parse value '{text}' as a duration: unknown unit '{unit}'")
    return number * units[unit]


class TableConfig:
    """The table environment's options: `table.*` keys here, every other key handed to the execution
    environment's Configuration (which knows and checks them)."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._table: dict[str, str] = {}

    def set(self, key: str, value: Any) -> TableConfig:
        value = str(value).lower() if isinstance(value, bool) else str(value)
        if key.startswith("table."):
            if key not in TABLE_OPTIONS:
                raise ValidationException(
                    f"unknown or unsupported table option '{key}': fluvial implements "
                    f"{', '.join(sorted(TABLE_OPTIONS))}; remove it"
                )
            if key == "table.local-time-zone" and value not in ("UTC", "Z", "+00:00", "GMT"):
                raise ValidationException(f"table.local-time-zone '{value}' is not supported: fluvial runs with UTC")
            _check_table_option(key, value)
            self._table[key] = value
            return self
        from fluvial.common.configuration import Configuration

        configuration = Configuration()
        configuration.set_string(key, value)
        self._env.configure(configuration)
        return self

    def get(self, key: str, default: Any = None) -> Any:
        if key in self._table:
            return self._table[key]
        if key.startswith("table."):
            return default
        configuration = self._env.get_configuration()
        return configuration.get_string(key, default) if configuration.contains_key(key) else default

    def get_configuration(self) -> _ConfigurationView:
        return _ConfigurationView(self)

    def set_local_timezone(self, timezone_id: str) -> None:
        self.set("table.local-time-zone", timezone_id)

    def get_local_timezone(self) -> str:
        return self._table.get("table.local-time-zone", "UTC")

    def set_idle_state_retention_time(self, min_time: Any, max_time: Any = None) -> None:
        self.set(
            "table.exec.state.ttl",
            str(min_time.to_milliseconds() if hasattr(min_time, "to_milliseconds") else int(min_time)),
        )

    def state_ttl_millis(self) -> int:
        value = self._table.get("table.exec.state.ttl")
        return parse_duration_millis(value) if value else 0


class _ConfigurationView:
    """`t_env.get_config().get_configuration().set_string(...)` as PyFlink programs write it."""

    def __init__(self, config: TableConfig) -> None:
        self._config = config

    def set_string(self, key: str, value: str) -> _ConfigurationView:
        self._config.set(key, value)
        return self

    def set_integer(self, key: str, value: int) -> _ConfigurationView:
        self._config.set(key, str(value))
        return self

    def set_boolean(self, key: str, value: bool) -> _ConfigurationView:
        self._config.set(key, "true" if value else "false")
        return self

    def get_string(self, key: str, default_value: str | None = None) -> str | None:
        return self._config.get(key, default_value)

    def set(self, key: Any, value: Any) -> _ConfigurationView:
        self._config.set(getattr(key, "key", key), value)
        return self
