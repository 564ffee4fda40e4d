"""Values shaped by their declared type, as PyFlink's serializers shape them.

In PyFlink a record crosses a typed boundary (an operator's `output_type`, `from_collection(type_info=...)`)
by being serialized for that type and read back: a tuple declared `Types.ROW_NAMED([...])` arrives as a
`Row` with field names, a `Types.FLOAT()` arrives rounded to 32 bits, and a value that does not fit (a str
in an INT field, an int outside 32 bits) fails. fluvial passes Python objects, so it applies the same shaping
directly: `converter_for(type_info)` composes, once per operator, a function doing exactly that, or returns
None when the type needs nothing (no type, `PICKLED_BYTE_ARRAY`, or types that keep any value).

A converter raises `TypeMismatch` naming the field path; the caller adds the operator's name.
`None` fits every type (Flink's fields are nullable).

One exception, PyFlink's: `from_collection(type_info=...)` hands its elements to Java, which narrows an int
outside a BYTE/SHORT/INT/LONG range the way Java's `Number.shortValue()` does, wrapping it around (43878
declared SHORT arrives as -21658). `narrowing_converter_for` builds that converter; an operator's
`output_type` keeps failing on such a value, as PyFlink's Cython coders raise OverflowError.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from typing import Any

from fluvial.common.row import Row, RowKind
from fluvial.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)

__all__ = [
    "TypeMismatch",
    "converter_for",
    "describe_mismatch",
    "fits_expression",
    "integer_range",
    "java_narrowing",
    "narrowing_converter_for",
]

Converter = Callable[[Any], Any]


class TypeMismatch(Exception):
    """A value that does not fit its type; `path` names the field (empty: the value itself)."""

    def __init__(self, path: str, type_info: TypeInformation, value: Any, reason: str) -> None:
        super().__init__(path, type_info, value, reason)
        self.path, self.type_info, self.value, self.reason = path, type_info, value, reason


def describe_mismatch(error: TypeMismatch, operator: str, declared: TypeInformation, *, key: bool = False) -> str:
    """One sentence naming the operator, the field, the value, what the field takes and the fix; `key`: the value
    is a key that `operator` (a key_by) computed for its declared key_type."""
    noun, whose = ("key", "a key whose") if key else ("value", "a record whose")
    what = f"{whose} field {error.path} does not" if error.path else f"a {noun} that does not"
    shown = repr(error.value)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    expected = repr(error.type_info)
    article = "an" if expected[:1] in "AEIOU" else "a"
    declared_as, fix = (
        ("key_type", "the key selector or its key_type")
        if key
        else ("type", "the function's result or its output_type / type_info")
    )
    return (
        f"'{operator}' produced {what} fit its declared {declared_as} {declared!r}: {shown} is not {article} "
        f"{expected} ({error.reason}); fix {fix}"
    )


def converter_for(type_info: Any, path: str = "") -> Converter | None:
    """The shaping function for values of `type_info`, or None when they are taken as they are."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return None
    for kind, build in _BUILDERS:
        if isinstance(type_info, kind):
            return build(type_info, path)
    return None  # a type PyFlink keeps as any Python value (user-defined, Avro records, ...)


@contextmanager
def java_narrowing() -> Iterator[None]:
    """Converters built inside wrap ints outside their declared range around, as Java narrows them."""
    token = _NARROWING.set(True)
    try:
        yield
    finally:
        _NARROWING.reset(token)


def narrowing_converter_for(type_info: Any) -> Converter | None:
    """`converter_for`, except that ints outside their declared range wrap around as Java narrows them."""
    with java_narrowing():
        return converter_for(type_info)


def fits_expression(type_info: Any, name: str = "v") -> str | None:
    """A Python expression over the variable `name` that is true exactly when the value fits `type_info` and
    its converter would hand it on unchanged; None when the type has no such test because it reshapes values
    (ROW to Row, FLOAT to 32 bits, DOUBLE from int, ...). The types with a test — integers, STRING, BOOLEAN,
    CHAR, BIG_INT and TUPLEs of them — are the ones checked where PyFlink serializes them (a network edge, a
    sink), in one generated loop per buffer (`fluvial.common.type_checks`); a value the test refuses goes
    through the converter, which turns a list into a tuple or raises the TypeMismatch."""
    if type_info is None or converter_for(type_info) is None:
        return "True"
    if isinstance(type_info, TupleTypeInfo):
        fields = [fits_expression(field, f"{name}[{index}]") for index, field in enumerate(type_info.get_field_types())]
        if any(field is None for field in fields):
            return None
        checks = [f"({field})" for field in fields if field != "True"]
        return " and ".join([f"type({name}) is tuple", f"len({name}) == {len(fields)}", *checks])
    if not isinstance(type_info, BasicTypeInfo):
        return None
    basic = type_info.basic_type
    if basic in _INT_BITS:
        bits = _INT_BITS[basic]
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if high <= _COMPACT:
            return f"type({name}) is int and {low} <= {name} <= {high}"
        # the common small int first: CPython compares ints of one digit in a specialised instruction, about
        # twice as fast as against the multi-digit bounds of INT and LONG
        return f"type({name}) is int and (-{_COMPACT} <= {name} <= {_COMPACT} or {low} <= {name} <= {high})"
    exact = {BasicType.STRING: "str", BasicType.BOOLEAN: "bool", BasicType.BIG_INT: "int"}.get(basic)
    if exact is not None:
        return f"type({name}) is {exact}"
    if basic is BasicType.CHAR:
        return f"type({name}) is str and len({name}) == 1"
    return None


def integer_range(type_info: Any) -> tuple[int, int] | None:
    """The smallest and largest value of an integer type (BYTE, SHORT, INT, LONG), else None."""
    if not isinstance(type_info, BasicTypeInfo) or type_info.basic_type not in _INT_BITS:
        return None
    bits = _INT_BITS[type_info.basic_type]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


# --- basic types -----------------------------------------------------------------------------------------

_NARROWING: ContextVar[bool] = ContextVar("_NARROWING", default=False)  # read while a converter is built

_INT_BITS = {BasicType.BYTE: 8, BasicType.SHORT: 16, BasicType.INT: 32, BasicType.LONG: 64}
_COMPACT = (1 << 30) - 1  # the largest int CPython stores in one digit
_FLOAT32 = struct.Struct("<f")


def _integer(type_info: BasicTypeInfo, path: str) -> Converter:
    bits = _INT_BITS[type_info.basic_type]
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    narrowing = _NARROWING.get()

    def convert(value: Any) -> Any:
        if type(value) is int and low <= value <= high:  # the common case first: one type check, one range
            return value
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeMismatch(path, type_info, value, f"expected an int, got {type(value).__name__}")
        if not low <= value <= high:
            if narrowing:  # two's complement, keeping the low `bits` bits (Java's narrowing conversion)
                return ((value - low) % (1 << bits)) + low
            raise TypeMismatch(path, type_info, value, f"outside the {bits}-bit range [{low}, {high}]")
        return value

    return convert


def _floating(type_info: BasicTypeInfo, path: str) -> Converter:
    single = type_info.basic_type is BasicType.FLOAT

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeMismatch(path, type_info, value, f"expected a float, got {type(value).__name__}")
        if not single:
            return float(value)
        try:
            return _FLOAT32.unpack(_FLOAT32.pack(value))[0]  # a Java float: 32 bits, as PyFlink reads it back
        except OverflowError:
            raise TypeMismatch(path, type_info, value, "too large for a 32-bit float") from None

    return convert


def _instance_check(
    type_info: TypeInformation, path: str, kinds: tuple[type, ...], what: str, exclude: tuple[type, ...] = ()
) -> Converter:
    exact = kinds[0]

    def convert(value: Any) -> Any:
        if type(value) is exact or value is None or (isinstance(value, kinds) and not isinstance(value, exclude)):
            return value
        raise TypeMismatch(path, type_info, value, f"expected {what}, got {type(value).__name__}")

    return convert


def _basic(type_info: BasicTypeInfo, path: str) -> Converter | None:
    basic = type_info.basic_type
    if basic in _INT_BITS:
        return _integer(type_info, path)
    if basic in (BasicType.FLOAT, BasicType.DOUBLE):
        return _floating(type_info, path)
    if basic is BasicType.STRING:
        return _instance_check(type_info, path, (str,), "a str")
    if basic is BasicType.BOOLEAN:
        return _instance_check(type_info, path, (bool,), "a bool")
    if basic is BasicType.CHAR:
        return _char(type_info, path)
    if basic is BasicType.BIG_INT:
        return _instance_check(type_info, path, (int,), "an int", (bool,))
    if basic is BasicType.BIG_DEC:
        return _instance_check(type_info, path, (Decimal, int), "a decimal.Decimal", (bool,))
    return None  # INSTANT: an Instant, a datetime or epoch millis all print and compare


def _char(type_info: BasicTypeInfo, path: str) -> Converter:
    def convert(value: Any) -> Any:
        if value is None or (isinstance(value, str) and len(value) == 1):
            return value
        raise TypeMismatch(path, type_info, value, "expected a str of length 1")

    return convert


# --- composite types -------------------------------------------------------------------------------------


def _field_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else f"'{name}'"


def _fields_of(type_info: RowTypeInfo | TupleTypeInfo, path: str, names: list[str]) -> list[Converter | None]:
    return [converter_for(t, _field_path(path, n)) for t, n in zip(type_info.get_field_types(), names)]


def _positional(type_info: TypeInformation, path: str, value: Any, arity: int) -> list:
    if not isinstance(value, (tuple, list, Row)):
        raise TypeMismatch(path, type_info, value, f"expected a tuple, list or Row, got {type(value).__name__}")
    if len(value) != arity:
        raise TypeMismatch(path, type_info, value, f"it has {len(value)} fields, the type {arity}")
    return list(value)


def _row(type_info: RowTypeInfo, path: str) -> Converter:
    names = type_info.get_field_names()  # shared by the rows built here: Rows never change their names in place
    fields = _fields_of(type_info, path, names)
    pairs = [(i, c) for i, c in enumerate(fields) if c is not None]
    arity = len(names)
    insert = RowKind.INSERT
    new_row, set_slot = Row.__new__, object.__setattr__

    def convert(value: Any) -> Any:
        if value is None:
            return None
        kind = insert
        if type(value) is tuple and len(value) == arity:
            values = list(value)
        else:
            values = _positional(type_info, path, value, arity)
            if type(value) is Row:
                kind = value.get_row_kind()
        for index, field in pairs:
            values[index] = field(values[index])
        row = new_row(Row)
        set_slot(row, "_values", values)
        set_slot(row, "_fields", names)
        set_slot(row, "_row_kind", kind)
        return row

    return convert


def _tuple(type_info: TupleTypeInfo, path: str) -> Converter:
    fields = _fields_of(type_info, path, [f"f{i}" for i in range(type_info.get_arity())])
    pairs = [(i, c) for i, c in enumerate(fields) if c is not None]
    arity = type_info.get_arity()

    def convert(value: Any) -> Any:
        if value is None:
            return None
        values = _positional(type_info, path, value, arity)
        for index, field in pairs:
            values[index] = field(values[index])
        return tuple(values)

    return convert


def _sequence(type_info: Any, path: str) -> Converter | None:
    element_type = type_info.element_type
    if isinstance(type_info, PrimitiveArrayTypeInfo) and element_type == BasicTypeInfo(BasicType.BYTE):
        return _instance_check(type_info, path, (bytes, bytearray), "bytes")
    element = converter_for(element_type, f"{path or 'the value'}[]")

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise TypeMismatch(path, type_info, value, f"expected a list, got {type(value).__name__}")
        return list(value) if element is None else [element(v) for v in value]

    return convert


def _map(type_info: MapTypeInfo, path: str) -> Converter:
    key = converter_for(type_info.key_type_info, f"{path or 'the value'} key")
    item = converter_for(type_info.value_type_info, f"{path or 'the value'} value")

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise TypeMismatch(path, type_info, value, f"expected a dict, got {type(value).__name__}")
        if key is None and item is None:
            return value
        return {(k if key is None else key(k)): (v if item is None else item(v)) for k, v in value.items()}

    return convert


def _date(type_info: DateTypeInfo, path: str) -> Converter:
    return _instance_check(type_info, path, (_dt.date,), "a datetime.date", (_dt.datetime,))


def _time(type_info: TimeTypeInfo, path: str) -> Converter:
    return _instance_check(type_info, path, (_dt.time,), "a datetime.time")


def _timestamp(type_info: TimestampTypeInfo, path: str) -> Converter:
    return _instance_check(type_info, path, (_dt.datetime,), "a datetime.datetime")


_BUILDERS: tuple[tuple[type | tuple[type, ...], Callable[[Any, str], Converter | None]], ...] = (
    (RowTypeInfo, _row),
    (TupleTypeInfo, _tuple),
    (BasicTypeInfo, _basic),
    ((ListTypeInfo, PrimitiveArrayTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo), _sequence),
    (MapTypeInfo, _map),
    (DateTypeInfo, _date),
    (TimeTypeInfo, _time),
    (TimestampTypeInfo, _timestamp),
)
