"""A DataStream as a table's source (from_data_stream): its columns from its declared type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Column
from fluvial.table.types import DataType

__all__ = ["DataStreamSource", "stream_columns"]


def _instant_to_datetime(value: Any) -> Any:
    import datetime as _dt

    from fluvial.table.values import from_epoch_millis

    if hasattr(value, "to_epoch_milli"):
        return from_epoch_millis(value.to_epoch_milli()).replace(tzinfo=_dt.UTC)
    return value


def stream_columns(data_stream: Any) -> tuple[tuple[Column, ...], bool, tuple[Any, ...] | None]:
    """(columns, atomic, converters): a row or tuple type gives its fields; a basic type one column `f0`."""
    from fluvial.table.type_mapping import to_data_type

    type_info = data_stream.get_type()
    data_type = to_data_type(type_info) if type_info is not None else None
    if data_type is None:
        raise ValidationException(
            "from_data_stream needs the stream's type: declare it (output_type=Types.ROW_NAMED([...], [...]) or "
            "type_info=Types.ROW([...]) on the stream's last operation); an untyped stream has no columns"
        )
    if data_type.name != "ROW":
        return (Column("f0", data_type),), True, None
    columns = tuple(Column(f.name, f.data_type) for f in data_type.fields)
    from fluvial.table.values import float32

    converters = tuple(
        _instant_to_datetime if c.type.name == "TIMESTAMP_LTZ" else float32 if c.type.name == "FLOAT" else None
        for c in columns
    )
    return columns, False, converters if any(converters) else None


@dataclass(frozen=True)
class DataStreamSource:
    stream: Any
    names: tuple[str, ...]
    atomic: bool
    converters: tuple[Any, ...] | None

    def create_stream(self, env: Any) -> Any:
        from fluvial.table.runtime.functions import ToRowFunction

        if self.stream.get_execution_environment() is not env:
            raise ValidationException(
                "the DataStream belongs to another StreamExecutionEnvironment than the table "
                "environment's: create the StreamTableEnvironment from the stream's env"
            )
        return self.stream.map(ToRowFunction(self.names, self.atomic, self.converters))


_ = DataType
