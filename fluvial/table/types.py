"""`DataTypes` (PyFlink `pyflink.table.types`): the logical types of the Table API and SQL.

A DataType is frozen data: its SQL name (`BIGINT`, `STRING`, `TIMESTAMP(3)`), whether it takes NULL, and for
composite types its children. `str(type)` is Flink's summary string (`STRING NOT NULL`), which `print_schema`,
`DESCRIBE` and error messages show. The Python values of each type are PyFlink's: int, float, Decimal, str,
bytes, bool, datetime.date/time/datetime, list, dict, Row.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import Enum
from typing import Any

__all__ = ["DataType", "DataTypes", "RowField", "TypeFamily"]


class TypeFamily(Enum):
    """What a type is for the planner's checks: which operations accept it."""

    NUMERIC = "numeric"
    CHARACTER = "character"
    BINARY = "binary"
    BOOLEAN = "boolean"
    DATETIME = "datetime"
    INTERVAL = "interval"
    COLLECTION = "collection"
    ROW = "row"
    NULL = "null"
    RAW = "raw"


# name -> (family, rank among numerics for widening)
_NUMERIC_RANK = {"TINYINT": 1, "SMALLINT": 2, "INT": 3, "BIGINT": 4, "DECIMAL": 5, "FLOAT": 6, "DOUBLE": 7}
_FAMILIES = {
    **{name: TypeFamily.NUMERIC for name in _NUMERIC_RANK},
    "CHAR": TypeFamily.CHARACTER,
    "VARCHAR": TypeFamily.CHARACTER,
    "STRING": TypeFamily.CHARACTER,
    "BINARY": TypeFamily.BINARY,
    "VARBINARY": TypeFamily.BINARY,
    "BYTES": TypeFamily.BINARY,
    "BOOLEAN": TypeFamily.BOOLEAN,
    "DATE": TypeFamily.DATETIME,
    "TIME": TypeFamily.DATETIME,
    "TIMESTAMP": TypeFamily.DATETIME,
    "TIMESTAMP_LTZ": TypeFamily.DATETIME,
    "INTERVAL_DAY_TIME": TypeFamily.INTERVAL,
    "INTERVAL_YEAR_MONTH": TypeFamily.INTERVAL,
    "ARRAY": TypeFamily.COLLECTION,
    "MAP": TypeFamily.COLLECTION,
    "MULTISET": TypeFamily.COLLECTION,
    "ROW": TypeFamily.ROW,
    "NULL": TypeFamily.NULL,
    "RAW": TypeFamily.RAW,
}
MAX_LENGTH = 2147483647


@dataclass(frozen=True, slots=True)
class RowField:
    """One field of a ROW type."""

    name: str
    data_type: DataType
    description: str | None = None

    def __str__(self) -> str:
        return f"`{self.name}` {self.data_type}"


@dataclass(frozen=True, slots=True)
class DataType:
    """A logical type. `name` is the root (`BIGINT`, `VARCHAR`, `TIMESTAMP`, `ARRAY`, ...); `precision` and
    `scale` are the parameters a type has (length for character and binary types); `time_attribute` marks a
    rowtime (`*ROWTIME*`) or proctime (`*PROCTIME*`) column, as Flink's summary strings show it."""

    name: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    element_type: DataType | None = None
    key_type: DataType | None = None
    fields: tuple[RowField, ...] = field(default=())
    time_attribute: str | None = None

    # -- PyFlink's methods ------------------------------------------------------------------------------------

    def not_null(self) -> DataType:
        return replace(self, nullable=False)

    def nullable_(self) -> DataType:
        return replace(self, nullable=True)

    def bridged_to(self, conversion_class: Any) -> DataType:
        return self  # Python values do not change with the JVM's conversion class

    @property
    def family(self) -> TypeFamily:
        return _FAMILIES.get(self.name, TypeFamily.RAW)

    def is_numeric(self) -> bool:
        return self.family is TypeFamily.NUMERIC

    def is_integral(self) -> bool:
        return self.name in ("TINYINT", "SMALLINT", "INT", "BIGINT")

    def is_string(self) -> bool:
        return self.family is TypeFamily.CHARACTER

    def is_timestamp(self) -> bool:
        return self.name in ("TIMESTAMP", "TIMESTAMP_LTZ")

    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field_types(self) -> list[DataType]:
        return [f.data_type for f in self.fields]

    def without_time_attribute(self) -> DataType:
        return replace(self, time_attribute=None) if self.time_attribute else self

    def __str__(self) -> str:
        return self.summary()

    def summary(self, with_time_attribute: bool = True) -> str:
        """Flink's `asSummaryString()`: `BIGINT NOT NULL`, `TIMESTAMP(3) NOT NULL *ROWTIME*`, `ROW<`a` INT>`."""
        text = self._root()
        if not self.nullable:
            text += " NOT NULL"
        if with_time_attribute and self.time_attribute:
            text += f" *{self.time_attribute}*"
        return text

    def _root(self) -> str:
        name = self.name
        if name == "VARCHAR" and self.precision == MAX_LENGTH:
            return "STRING"
        if name == "VARBINARY" and self.precision == MAX_LENGTH:
            return "BYTES"
        if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY", "TIME"):
            return f"{name}({self.precision})"
        if name == "DECIMAL":
            return f"DECIMAL({self.precision}, {self.scale})"
        if name == "TIMESTAMP":
            return f"TIMESTAMP({self.precision})"
        if name == "TIMESTAMP_LTZ":
            return f"TIMESTAMP_LTZ({self.precision})"
        if name == "ARRAY":
            return f"ARRAY<{self.element_type}>"
        if name == "MULTISET":
            return f"MULTISET<{self.element_type}>"
        if name == "MAP":
            return f"MAP<{self.key_type}, {self.element_type}>"
        if name == "ROW":
            return "ROW<" + ", ".join(str(f) for f in self.fields) + ">"
        if name == "INTERVAL_DAY_TIME":
            return "INTERVAL SECOND(3)"
        if name == "INTERVAL_YEAR_MONTH":
            return "INTERVAL MONTH"
        return name

    def __repr__(self) -> str:
        return f"DataTypes.{self.summary()}"


def _t(name: str, nullable: bool = True, **kw: Any) -> DataType:
    return DataType(name, nullable, **kw)


class DataTypes:
    """PyFlink's factory of data types: `DataTypes.BIGINT()`, `DataTypes.ROW([DataTypes.FIELD("a", ...)])`."""

    @staticmethod
    def NULL() -> DataType:
        return _t("NULL")

    @staticmethod
    def CHAR(length: int = 1, nullable: bool = True) -> DataType:
        return _t("CHAR", nullable, precision=length)

    @staticmethod
    def VARCHAR(length: int = MAX_LENGTH, nullable: bool = True) -> DataType:
        return _t("VARCHAR", nullable, precision=length)

    @staticmethod
    def STRING(nullable: bool = True) -> DataType:
        return _t("VARCHAR", nullable, precision=MAX_LENGTH)

    @staticmethod
    def BOOLEAN(nullable: bool = True) -> DataType:
        return _t("BOOLEAN", nullable)

    @staticmethod
    def BINARY(length: int = 1, nullable: bool = True) -> DataType:
        return _t("BINARY", nullable, precision=length)

    @staticmethod
    def VARBINARY(length: int = MAX_LENGTH, nullable: bool = True) -> DataType:
        return _t("VARBINARY", nullable, precision=length)

    @staticmethod
    def BYTES(nullable: bool = True) -> DataType:
        return _t("VARBINARY", nullable, precision=MAX_LENGTH)

    @staticmethod
    def DECIMAL(precision: int = 10, scale: int = 0, nullable: bool = True) -> DataType:
        return _t("DECIMAL", nullable, precision=precision, scale=scale)

    @staticmethod
    def TINYINT(nullable: bool = True) -> DataType:
        return _t("TINYINT", nullable)

    @staticmethod
    def SMALLINT(nullable: bool = True) -> DataType:
        return _t("SMALLINT", nullable)

    @staticmethod
    def INT(nullable: bool = True) -> DataType:
        return _t("INT", nullable)

    @staticmethod
    def BIGINT(nullable: bool = True) -> DataType:
        return _t("BIGINT", nullable)

    @staticmethod
    def FLOAT(nullable: bool = True) -> DataType:
        return _t("FLOAT", nullable)

    @staticmethod
    def DOUBLE(nullable: bool = True) -> DataType:
        return _t("DOUBLE", nullable)

    @staticmethod
    def DATE(nullable: bool = True) -> DataType:
        return _t("DATE", nullable)

    @staticmethod
    def TIME(precision: int = 0, nullable: bool = True) -> DataType:
        return _t("TIME", nullable, precision=precision)

    @staticmethod
    def TIMESTAMP(precision: int = 6, nullable: bool = True) -> DataType:
        return _t("TIMESTAMP", nullable, precision=precision)

    @staticmethod
    def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> DataType:
        return _t("TIMESTAMP_LTZ", nullable, precision=precision)

    TIMESTAMP_WITH_LOCAL_TIME_ZONE = TIMESTAMP_LTZ

    @staticmethod
    def ARRAY(element_type: DataType, nullable: bool = True) -> DataType:
        return _t("ARRAY", nullable, element_type=element_type)

    @staticmethod
    def MAP(key_type: DataType, value_type: DataType, nullable: bool = True) -> DataType:
        return _t("MAP", nullable, key_type=key_type, element_type=value_type)

    @staticmethod
    def MULTISET(element_type: DataType, nullable: bool = True) -> DataType:
        return _t("MULTISET", nullable, element_type=element_type)

    @staticmethod
    def ROW(row_fields: list[RowField] | None = None, nullable: bool = True) -> DataType:
        return _t("ROW", nullable, fields=tuple(row_fields or ()))

    @staticmethod
    def FIELD(name: str, data_type: DataType, description: str | None = None) -> RowField:
        return RowField(name, data_type, description)

    @staticmethod
    def INTERVAL(upper: Any = None, lower: Any = None) -> DataType:
        return _t("INTERVAL_DAY_TIME")

    @staticmethod
    def SECOND(precision: int = 6) -> Any:
        return "SECOND"

    @staticmethod
    def MINUTE() -> Any:
        return "MINUTE"

    @staticmethod
    def HOUR() -> Any:
        return "HOUR"

    @staticmethod
    def DAY(precision: int = 2) -> Any:
        return "DAY"


# -- Python values ----------------------------------------------------------------------------------------------


def infer_type(value: Any) -> DataType:
    """The type PyFlink's `from_elements` infers for a Python value (int → BIGINT, float → DOUBLE, ...)."""
    if value is None:
        return DataTypes.NULL()
    if isinstance(value, bool):
        return DataTypes.BOOLEAN()
    if isinstance(value, int):
        return DataTypes.BIGINT()
    if isinstance(value, float):
        return DataTypes.DOUBLE()
    if isinstance(value, str):
        return DataTypes.STRING()
    if isinstance(value, (bytes, bytearray)):
        return DataTypes.BYTES()
    if isinstance(value, Decimal):
        return DataTypes.DECIMAL(38, 18)
    if isinstance(value, _dt.datetime):
        return DataTypes.TIMESTAMP_LTZ(6) if value.tzinfo else DataTypes.TIMESTAMP(6)
    if isinstance(value, _dt.date):
        return DataTypes.DATE()
    if isinstance(value, _dt.time):
        return DataTypes.TIME(0)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_values"):
        return DataTypes.ARRAY(_merge([infer_type(v) for v in value]) if value else DataTypes.NULL())
    if isinstance(value, dict):
        keys = [infer_type(k) for k in value]
        values = [infer_type(v) for v in value.values()]
        return DataTypes.MAP(_merge(keys) if keys else DataTypes.NULL(), _merge(values) if values else DataTypes.NULL())
    names = getattr(value, "_fields", None)
    if hasattr(value, "_values"):  # a Row
        names = names or [f"_{i + 1}" for i in range(len(value))]
        return DataTypes.ROW([DataTypes.FIELD(n, infer_type(v)) for n, v in zip(names, value)])
    raise TypeError(f"cannot infer a SQL type for {value!r} of {type(value).__name__}; give the schema's types")


def _merge(types: list[DataType]) -> DataType:
    known = [t for t in types if t.name != "NULL"]
    return common_type(known) if known else DataTypes.NULL()


def common_type(types: list[DataType]) -> DataType:
    """The least restrictive type of `types` (Flink's type coercion for UNION, CASE, IN, comparisons), or a
    TypeError naming the two that do not meet."""
    result = types[0]
    for other in types[1:]:
        result = _widen(result, other)
    return result


def _widen(a: DataType, b: DataType) -> DataType:
    nullable = a.nullable or b.nullable
    if a.name == "NULL":
        return replace(b, nullable=True)
    if b.name == "NULL":
        return replace(a, nullable=True)
    if a.without_time_attribute() == b.without_time_attribute():
        return replace(a.without_time_attribute(), nullable=nullable)
    if a.is_numeric() and b.is_numeric():
        ra, rb = _NUMERIC_RANK[a.name], _NUMERIC_RANK[b.name]
        if a.name == "DECIMAL" and b.name == "DECIMAL":
            scale = max(a.scale or 0, b.scale or 0)
            digits = max((a.precision or 10) - (a.scale or 0), (b.precision or 10) - (b.scale or 0))
            return DataTypes.DECIMAL(min(38, digits + scale), scale, nullable)
        return replace(a if ra >= rb else b, nullable=nullable)
    if a.is_string() and b.is_string():
        if a.name == "CHAR" and b.name == "CHAR" and a.precision == b.precision:
            return DataTypes.CHAR(a.precision or 1, nullable)
        return DataTypes.VARCHAR(max(a.precision or 1, b.precision or 1), nullable)
    if a.family is b.family and a.family in (TypeFamily.DATETIME, TypeFamily.BINARY, TypeFamily.BOOLEAN):
        if a.name == b.name:
            return replace(
                a.without_time_attribute(),
                precision=max(a.precision or 0, b.precision or 0) or a.precision,
                nullable=nullable,
            )
    raise TypeError(f"{a.summary(False)} and {b.summary(False)}")
