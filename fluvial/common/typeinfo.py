"""PyFlink's type information (`Types.ROW([...])`, `Types.STRING()`, ...), advisory only.

PyFlink needs a TypeInformation to pick a serializer for the JVM; fluvial passes records between Python
operators as Python objects and pickles them across processes, so a type never changes how a record is
carried. It is accepted everywhere PyFlink accepts one and used for two things only:

1. printing: the print sink formats a record the way Flink's `toString()` would for that type
   (`+I[a, 1]` for rows, `(a,1)` for tuples, `true` for booleans), see `print_format`;
2. describing the job (plans, the web UI).

Records are never checked against their type, so a wrong type never fails a job; a type is validated
only when it is built (an array of a non-primitive type, row names that do not match the types).

Every type is an immutable value: equal types compare and hash equal, and all of them pickle.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

__all__ = [
    "BasicArrayTypeInfo",
    "BasicType",
    "BasicTypeInfo",
    "DateTypeInfo",
    "InstantTypeInfo",
    "ListTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowTypeInfo",
    "SqlTimeTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
]


class TypeInformation:
    """Base of every type. Subclasses describe themselves by `_key()`, which drives equality and hashing."""

    __slots__ = ()

    def _key(self) -> tuple[Any, ...]:
        return ()

    def need_conversion(self) -> bool:
        """PyFlink's hook for types whose Python values differ from their wire form; never true here,
        because records stay Python objects end to end."""
        return False

    def to_internal_type(self, obj: Any) -> Any:
        """A value of this type in the form the engine carries it (e.g. a Row for a row type).

        Args:
            obj: The value as user code sees it.

        Returns:
            The internal form.
        """
        return obj

    def from_internal_type(self, obj: Any) -> Any:
        """A value of this type in the form user code sees it.

        Args:
            obj: The internal form.

        Returns:
            The value.
        """
        return obj

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        return type(self).__name__


class BasicType(Enum):
    """The basic types, valued by the names Flink gives them."""

    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


class BasicTypeInfo(TypeInformation):
    """Strings, numbers, booleans, chars, big integers and decimals (and instants, via a subclass)."""

    __slots__ = ("_basic_type",)

    def __init__(self, basic_type: BasicType) -> None:
        self._basic_type = BasicType(basic_type)

    @property
    def basic_type(self) -> BasicType:
        return self._basic_type

    def _key(self) -> tuple[Any, ...]:
        return (self._basic_type,)

    def __repr__(self) -> str:
        return self._basic_type.value

    @staticmethod
    def STRING_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BOOLEAN_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def BYTE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def SHORT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT_TYPE_INFO() -> InstantTypeInfo:
        return InstantTypeInfo()


class InstantTypeInfo(BasicTypeInfo):
    """A point in time (Flink's `Instant`)."""

    __slots__ = ()

    def __init__(self, basic_type: BasicType = BasicType.INSTANT) -> None:
        super().__init__(basic_type)


class DateTypeInfo(TypeInformation):
    """A calendar date (`datetime.date`), Flink's `SqlTimeTypeInfo.DATE`."""

    __slots__ = ()


class TimeTypeInfo(TypeInformation):
    """A time of day (`datetime.time`), Flink's `SqlTimeTypeInfo.TIME`."""

    __slots__ = ()


class TimestampTypeInfo(TypeInformation):
    """A date and time (`datetime.datetime`), Flink's `SqlTimeTypeInfo.TIMESTAMP`."""

    __slots__ = ()


class SqlTimeTypeInfo:
    """Factory for the SQL time types, as in PyFlink."""

    @staticmethod
    def DATE() -> DateTypeInfo:
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:
        return TimestampTypeInfo()


class PickledBytesTypeInfo(TypeInformation):
    """Any Python object, pickled when it crosses a process: PyFlink's default when no type is given."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"

    @staticmethod
    def PICKLED_BYTE_ARRAY_TYPE_INFO() -> PickledBytesTypeInfo:
        return PickledBytesTypeInfo()


_PRIMITIVE_ELEMENTS = frozenset(
    {
        BasicType.BOOLEAN,
        BasicType.BYTE,
        BasicType.SHORT,
        BasicType.INT,
        BasicType.LONG,
        BasicType.FLOAT,
        BasicType.DOUBLE,
        BasicType.CHAR,
    }
)
_BASIC_ARRAY_ELEMENTS = _PRIMITIVE_ELEMENTS | {BasicType.STRING}


def _require_type(value: object, what: str) -> TypeInformation:
    if not isinstance(value, TypeInformation):
        raise TypeError(f"{what} must be a TypeInformation such as Types.STRING(), got {value!r}")
    return value


class _ArrayTypeInfo(TypeInformation):
    """Shared shape of the three array types: one element type, shown as `Name<Element>`."""

    __slots__ = ("_element_type",)

    def __init__(self, element_type: TypeInformation) -> None:
        self._element_type = _require_type(element_type, "an array's element type")

    @property
    def element_type(self) -> TypeInformation:
        return self._element_type

    def _key(self) -> tuple[Any, ...]:
        return (self._element_type,)

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self._element_type!r}>"


def _basic_element(element_type: TypeInformation, allowed: frozenset[BasicType], kind: str) -> None:
    if type(element_type) is not BasicTypeInfo or element_type.basic_type not in allowed:
        names = ", ".join(sorted(f"Types.{b.name}()" for b in allowed))
        raise TypeError(f"{kind} holds only {names}; got {element_type!r}. Use Types.OBJECT_ARRAY for others.")


class PrimitiveArrayTypeInfo(_ArrayTypeInfo):
    """An array of a primitive type (int, long, double, ...): Java's `int[]`, `double[]`."""

    __slots__ = ()

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__(element_type)
        _basic_element(self._element_type, _PRIMITIVE_ELEMENTS, "Types.PRIMITIVE_ARRAY")


class BasicArrayTypeInfo(_ArrayTypeInfo):
    """An array of a boxed basic type or strings: Java's `Integer[]`, `String[]`."""

    __slots__ = ()

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__(element_type)
        _basic_element(self._element_type, _BASIC_ARRAY_ELEMENTS, "Types.BASIC_ARRAY")


class ObjectArrayTypeInfo(_ArrayTypeInfo):
    """An array of any type (rows, tuples, other arrays)."""

    __slots__ = ()


class ListTypeInfo(TypeInformation):
    """A list of one element type (Java's `List<T>`)."""

    __slots__ = ("elem_type",)

    def __init__(self, element_type: TypeInformation) -> None:
        self.elem_type = _require_type(element_type, "a list's element type")

    @property
    def element_type(self) -> TypeInformation:
        return self.elem_type

    def _key(self) -> tuple[Any, ...]:
        return (self.elem_type,)

    def __repr__(self) -> str:
        return f"ListTypeInfo<{self.elem_type!r}>"


class MapTypeInfo(TypeInformation):
    """A map from one key type to one value type (Java's `Map<K, V>`)."""

    __slots__ = ("_key_type_info", "_value_type_info")

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        self._key_type_info = _require_type(key_type_info, "a map's key type")
        self._value_type_info = _require_type(value_type_info, "a map's value type")

    @property
    def key_type_info(self) -> TypeInformation:
        return self._key_type_info

    @property
    def value_type_info(self) -> TypeInformation:
        return self._value_type_info

    def _key(self) -> tuple[Any, ...]:
        return (self._key_type_info, self._value_type_info)

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info!r}, {self._value_type_info!r}>"


class RowTypeInfo(TypeInformation):
    """A row of typed fields; fields are named `f0, f1, ...` unless names are given (as in Flink).

    Two row types are equal when their field types and field names are equal.
    """

    __slots__ = ("_field_types", "_field_names", "_names_given")

    def __init__(self, field_types: Sequence[TypeInformation], field_names: Sequence[str] | None = None) -> None:
        types = tuple(_require_type(t, "a row field's type") for t in field_types)
        if field_names is None:
            names = tuple(f"f{i}" for i in range(len(types)))
        else:
            names = tuple(field_names)
            if len(names) != len(types):
                raise ValueError(
                    f"Types.ROW_NAMED got {len(names)} field names {list(names)} for {len(types)} field types; "
                    "give one name per type"
                )
            for name in names:
                if not isinstance(name, str) or not name:
                    raise ValueError(f"row field names must be non-empty strings, got {name!r}")
            if len(set(names)) != len(names):
                raise ValueError(f"row field names must be unique, got {list(names)}")
        self._field_types = types
        self._field_names = names
        self._names_given = field_names is not None

    def get_field_names(self) -> list[str]:
        return list(self._field_names)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self._field_types)

    def get_field_index(self, field_name: str) -> int:
        """The position of a field, or -1 when the row has no field of that name (Flink's contract)."""
        try:
            return self._field_names.index(field_name)
        except ValueError:
            return -1

    def get_arity(self) -> int:
        return len(self._field_types)

    def _key(self) -> tuple[Any, ...]:
        return (self._field_types, self._field_names)

    def __repr__(self) -> str:
        if self._names_given:
            inner = ", ".join(f"{n}: {t!r}" for n, t in zip(self._field_names, self._field_types))
        else:
            inner = ", ".join(repr(t) for t in self._field_types)
        return f"RowTypeInfo({inner})"


class TupleTypeInfo(TypeInformation):
    """A fixed-length tuple of typed fields (Flink's `Tuple2`, `Tuple3`, ...)."""

    __slots__ = ("_field_types",)

    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        self._field_types = tuple(_require_type(t, "a tuple field's type") for t in field_types)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self._field_types)

    def get_arity(self) -> int:
        return len(self._field_types)

    def _key(self) -> tuple[Any, ...]:
        return (self._field_types,)

    def __repr__(self) -> str:
        return "TupleTypeInfo(" + ", ".join(repr(t) for t in self._field_types) + ")"


class Types:
    """PyFlink's factory of type information: `Types.ROW([Types.STRING(), Types.INT()])`."""

    @staticmethod
    def STRING() -> TypeInformation:
        """The type of a str (PyFlink's `Types.STRING()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.STRING_TYPE_INFO()

    @staticmethod
    def BYTE() -> TypeInformation:
        """The type of an 8-bit integer (PyFlink's `Types.BYTE()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.BYTE_TYPE_INFO()

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        """The type of a bool (PyFlink's `Types.BOOLEAN()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.BOOLEAN_TYPE_INFO()

    @staticmethod
    def SHORT() -> TypeInformation:
        """The type of a 16-bit integer (PyFlink's `Types.SHORT()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.SHORT_TYPE_INFO()

    @staticmethod
    def INT() -> TypeInformation:
        """The type of a 32-bit integer (PyFlink's `Types.INT()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.INT_TYPE_INFO()

    @staticmethod
    def LONG() -> TypeInformation:
        """The type of a 64-bit integer (PyFlink's `Types.LONG()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.LONG_TYPE_INFO()

    @staticmethod
    def FLOAT() -> TypeInformation:
        """The type of a 32-bit float (values are rounded to single precision) (PyFlink's `Types.FLOAT()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.FLOAT_TYPE_INFO()

    @staticmethod
    def DOUBLE() -> TypeInformation:
        """The type of a 64-bit float (PyFlink's `Types.DOUBLE()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.DOUBLE_TYPE_INFO()

    @staticmethod
    def CHAR() -> TypeInformation:
        """The type of a one-character str (PyFlink's `Types.CHAR()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.CHAR_TYPE_INFO()

    @staticmethod
    def BIG_INT() -> TypeInformation:
        """The type of an arbitrary-precision int (PyFlink's `Types.BIG_INT()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.BIG_INT_TYPE_INFO()

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        """The type of a decimal.Decimal (PyFlink's `Types.BIG_DEC()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.BIG_DEC_TYPE_INFO()

    @staticmethod
    def INSTANT() -> TypeInformation:
        """The type of an Instant (PyFlink's `Types.INSTANT()`).

        Returns:
            The TypeInformation.
        """
        return BasicTypeInfo.INSTANT_TYPE_INFO()

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        """The type of a datetime.date (PyFlink's `Types.SQL_DATE()`).

        Returns:
            The TypeInformation.
        """
        return SqlTimeTypeInfo.DATE()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        """The type of a datetime.time (PyFlink's `Types.SQL_TIME()`).

        Returns:
            The TypeInformation.
        """
        return SqlTimeTypeInfo.TIME()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        """The type of a datetime.datetime (PyFlink's `Types.SQL_TIMESTAMP()`).

        Returns:
            The TypeInformation.
        """
        return SqlTimeTypeInfo.TIMESTAMP()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        """The type of any picklable Python object, carried as-is (PyFlink's `Types.PICKLED_BYTE_ARRAY()`).

        Returns:
            The TypeInformation.
        """
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> RowTypeInfo:
        """A row whose fields are named `f0, f1, ...`."""
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: Sequence[str], field_types: Sequence[TypeInformation]) -> RowTypeInfo:
        """A Row type with named fields: functions receive `Row`s with field access by name (`row.price`).

        Args:
            field_names: The fields' names.
            field_types: Their types, in the same order.

        Returns:
            The RowTypeInfo.

        Example:
            ```python
            Types.ROW_NAMED(["id", "price"], [Types.INT(), Types.DOUBLE()])
            ```
        """
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TupleTypeInfo:
        """A tuple type: functions receive tuples with these field types.

        Args:
            field_types: The fields' types.

        Returns:
            The TupleTypeInfo.

        Example:
            ```python
            Types.TUPLE([Types.STRING(), Types.INT()])
            ```
        """
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> PrimitiveArrayTypeInfo:
        """An array of a primitive type (no None elements).

        Args:
            element_type: The elements' type.

        Returns:
            The PrimitiveArrayTypeInfo.
        """
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> BasicArrayTypeInfo:
        """An array of a basic type (elements may be None).

        Args:
            element_type: The elements' type.

        Returns:
            The BasicArrayTypeInfo.
        """
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> ObjectArrayTypeInfo:
        """An array of objects of one type.

        Args:
            element_type: The elements' type.

        Returns:
            The ObjectArrayTypeInfo.
        """
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> MapTypeInfo:
        """A dict type.

        Args:
            key_type_info: The keys' type.
            value_type_info: The values' type.

        Returns:
            The MapTypeInfo.
        """
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> ListTypeInfo:
        """A list type.

        Args:
            element_type_info: The elements' type.

        Returns:
            The ListTypeInfo.
        """
        return ListTypeInfo(element_type_info)
