"""DataStream TypeInformation ↔ table DataType, for from_data_stream / to_data_stream."""

from __future__ import annotations

from typing import Any

from fluvial.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    Types,
)
from fluvial.table.types import DataType, DataTypes

__all__ = ["to_data_type", "to_type_info"]

_BASIC = {
    BasicType.STRING: DataTypes.STRING,
    BasicType.BOOLEAN: DataTypes.BOOLEAN,
    BasicType.BYTE: DataTypes.TINYINT,
    BasicType.SHORT: DataTypes.SMALLINT,
    BasicType.INT: DataTypes.INT,
    BasicType.LONG: DataTypes.BIGINT,
    BasicType.FLOAT: DataTypes.FLOAT,
    BasicType.DOUBLE: DataTypes.DOUBLE,
    BasicType.CHAR: DataTypes.STRING,
}


def to_data_type(type_info: Any) -> DataType | None:
    """None for an untyped (pickled) stream: its records keep their Python form in a RAW column."""
    if isinstance(type_info, BasicTypeInfo):
        if type_info.basic_type is BasicType.INSTANT:
            return DataTypes.TIMESTAMP_LTZ(9)
        if type_info.basic_type is BasicType.BIG_DEC:
            return DataTypes.DECIMAL(38, 18)
        factory = _BASIC.get(type_info.basic_type)
        return factory() if factory else None
    if isinstance(type_info, TimestampTypeInfo):
        return DataTypes.TIMESTAMP(3)
    if isinstance(type_info, DateTypeInfo):
        return DataTypes.DATE()
    if isinstance(type_info, TimeTypeInfo):
        return DataTypes.TIME()
    if isinstance(type_info, ListTypeInfo):
        element = to_data_type(type_info.element_type)
        return DataTypes.ARRAY(element) if element else None
    if isinstance(type_info, MapTypeInfo):
        k, v = to_data_type(type_info.key_type_info), to_data_type(type_info.value_type_info)
        return DataTypes.MAP(k, v) if k and v else None
    if isinstance(type_info, (RowTypeInfo, TupleTypeInfo)):
        names = (
            type_info.get_field_names()
            if isinstance(type_info, RowTypeInfo)
            else [f"f{i}" for i in range(len(type_info.get_field_types()))]
        )
        fields = []
        for n, t in zip(names, type_info.get_field_types()):
            dt = to_data_type(t)
            fields.append(DataTypes.FIELD(n, dt if dt is not None else DataType("RAW")))
        return DataTypes.ROW(fields)
    return None


def to_type_info(data_type: DataType) -> Any:
    name = data_type.name
    simple = {
        "TINYINT": Types.BYTE,
        "SMALLINT": Types.SHORT,
        "INT": Types.INT,
        "BIGINT": Types.LONG,
        "FLOAT": Types.FLOAT,
        "DOUBLE": Types.DOUBLE,
        "BOOLEAN": Types.BOOLEAN,
        "VARCHAR": Types.STRING,
        "CHAR": Types.STRING,
        "DATE": Types.SQL_DATE,
        "TIME": Types.SQL_TIME,
        "TIMESTAMP": Types.SQL_TIMESTAMP,
        "TIMESTAMP_LTZ": Types.INSTANT,
        "DECIMAL": Types.BIG_DEC,
    }
    if name in simple:
        return simple[name]()
    if name in ("VARBINARY", "BINARY"):
        return Types.PRIMITIVE_ARRAY(Types.BYTE())
    if name == "ARRAY" and data_type.element_type is not None:
        return Types.LIST(to_type_info(data_type.element_type))
    if name == "MAP" and data_type.key_type is not None and data_type.element_type is not None:
        return Types.MAP(to_type_info(data_type.key_type), to_type_info(data_type.element_type))
    if name == "ROW":
        return Types.ROW_NAMED(data_type.field_names(), [to_type_info(t) for t in data_type.field_types()])
    return Types.PICKLED_BYTE_ARRAY()
