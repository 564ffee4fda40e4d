import datetime as dt
from decimal import Decimal

import pytest

from fluvial.common.print_format import format_for_print, java_double_string, java_float_string, print_prefix
from fluvial.common.row import Row, RowKind
from fluvial.common.typeinfo import Types

ROW_SI = Types.ROW([Types.STRING(), Types.INT()])


# --- untyped: PyFlink prints str() ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,expected",
    [
        (("a", 1), "('a', 1)"),
        ("hello", "hello"),
        (3, "3"),
        (True, "True"),
        (None, "None"),
        ([1, None], "[1, None]"),
        (Row(1, "a"), "<Row(1, 'a')>"),
        (Row(word="a", count=2), "Row(word='a', count=2)"),
    ],
)
def test_untyped_values_print_their_str(value, expected):
    assert format_for_print(value) == expected
    assert format_for_print(value, Types.PICKLED_BYTE_ARRAY()) == expected


# --- rows ------------------------------------------------------------------------------------------------


def test_row_type_prints_kind_and_fields():
    assert format_for_print(Row("a", 1), ROW_SI) == "+I[a, 1]"
    assert format_for_print(("a", 1), ROW_SI) == "+I[a, 1]"
    assert format_for_print(["a", 1], ROW_SI) == "+I[a, 1]"


def test_row_kind_is_printed():
    assert format_for_print(Row.of_kind(RowKind.DELETE, "a", 1), ROW_SI) == "-D[a, 1]"
    assert format_for_print(Row.of_kind(RowKind.UPDATE_BEFORE, "a", 1), ROW_SI) == "-U[a, 1]"
    assert format_for_print(Row.of_kind(RowKind.UPDATE_AFTER, "a", 1), ROW_SI) == "+U[a, 1]"


def test_nested_rows_and_nulls():
    t = Types.ROW([Types.STRING(), Types.ROW([Types.STRING(), Types.INT()])])
    assert format_for_print(Row("a", Row("b", 2)), t) == "+I[a, +I[b, 2]]"
    assert format_for_print(("a", None), t) == "+I[a, null]"
    assert format_for_print(Row(None, Row.of_kind(RowKind.DELETE, "b", None)), t) == "+I[null, -D[b, null]]"


def test_named_row_type_picks_fields_by_name():
    t = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.LONG()])
    assert format_for_print(Row(count=3, word="w"), t) == "+I[w, 3]"
    assert format_for_print({"count": 3, "word": "w"}, t) == "+I[w, 3]"
    # names that do not match the type: positional, as the row stands
    assert format_for_print(Row(x="w", y=3), t) == "+I[w, 3]"


def test_row_type_with_object_having_attributes():
    class Event:
        def __init__(self):
            self.word, self.count = "w", 4

    t = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.INT()])
    assert format_for_print(Event(), t) == "+I[w, 4]"


def test_row_with_more_values_than_types_prints_them_all():
    assert format_for_print(("a", 1, None, 2.5), ROW_SI) == "+I[a, 1, null, 2.5]"


def test_value_that_does_not_fit_its_type_prints_str():
    assert format_for_print(42, ROW_SI) == "42"
    assert format_for_print("abc", Types.TUPLE([Types.STRING()])) == "abc"
    assert format_for_print(5, Types.LIST(Types.INT())) == "5"


# --- tuples ----------------------------------------------------------------------------------------------


def test_tuple_type_prints_without_spaces():
    t = Types.TUPLE([Types.STRING(), Types.INT()])
    assert format_for_print(("a", 1), t) == "(a,1)"
    assert format_for_print(["a", None], t) == "(a,null)"


def test_nested_tuples_and_rows_inside_tuples():
    t = Types.TUPLE([Types.STRING(), Types.TUPLE([Types.INT(), Types.BOOLEAN()]), ROW_SI])
    assert format_for_print(("a", (1, False), Row("b", 2)), t) == "(a,(1,false),+I[b, 2])"


# --- basic types -----------------------------------------------------------------------------------------


def test_booleans_print_as_java_does():
    assert format_for_print(True, Types.BOOLEAN()) == "true"
    assert format_for_print(False, Types.BOOLEAN()) == "false"
    assert format_for_print(("x", True), Types.TUPLE([Types.STRING(), Types.BOOLEAN()])) == "(x,true)"


def test_strings_and_ints_print_plainly():
    assert format_for_print("a b", Types.STRING()) == "a b"
    assert format_for_print(7, Types.LONG()) == "7"
    assert format_for_print(Decimal("1.50"), Types.BIG_DEC()) == "1.50"


def test_doubles_follow_java():
    assert format_for_print(1.5, Types.DOUBLE()) == "1.5"
    assert format_for_print(2, Types.DOUBLE()) == "2.0"
    assert format_for_print(1e10, Types.DOUBLE()) == "1.0E10"
    assert format_for_print(1 / 3, Types.FLOAT()) == "0.33333334"


@pytest.mark.parametrize(
    "number,expected",
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1.5e-5, "1.5E-5"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (-2.5e20, "-2.5E20"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_java_double_string(number, expected):
    assert java_double_string(number) == expected


@pytest.mark.parametrize(
    "number,expected",
    [(0.1, "0.1"), (3.14159, "3.14159"), (16777217.0, "1.6777216E7"), (1e39, "Infinity"), (1e-3, "0.001")],
)
def test_java_float_string(number, expected):
    assert java_float_string(number) == expected


# --- time types ------------------------------------------------------------------------------------------


def test_time_types_follow_java_sql_types():
    assert format_for_print(dt.date(2024, 1, 2), Types.SQL_DATE()) == "2024-01-02"
    assert format_for_print(dt.time(9, 5, 7, 123), Types.SQL_TIME()) == "09:05:07"
    assert format_for_print(dt.datetime(2024, 1, 2, 3, 4, 5), Types.SQL_TIMESTAMP()) == "2024-01-02 03:04:05.0"
    assert format_for_print(dt.datetime(2024, 1, 2, 3, 4, 5, 120000), Types.SQL_TIMESTAMP()) == "2024-01-02 03:04:05.12"


def test_instant_follows_java_instant():
    utc = dt.UTC
    assert format_for_print(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc), Types.INSTANT()) == "2024-01-02T03:04:05Z"
    at_millis = dt.datetime(2024, 1, 2, 3, 4, 5, 250000, tzinfo=utc)
    assert format_for_print(at_millis, Types.INSTANT()) == "2024-01-02T03:04:05.250Z"
    at_micros = dt.datetime(2024, 1, 2, 3, 4, 5, 250001, tzinfo=utc)
    assert format_for_print(at_micros, Types.INSTANT()) == "2024-01-02T03:04:05.250001Z"


# --- collections -----------------------------------------------------------------------------------------


def test_lists_arrays_and_maps():
    assert format_for_print([1, 2], Types.LIST(Types.INT())) == "[1, 2]"
    assert format_for_print([True, None], Types.BASIC_ARRAY(Types.BOOLEAN())) == "[true, null]"
    assert format_for_print(b"\x01\xff", Types.PRIMITIVE_ARRAY(Types.BYTE())) == "[1, -1]"
    assert format_for_print([Row("a", 1)], Types.OBJECT_ARRAY(ROW_SI)) == "[+I[a, 1]]"
    assert format_for_print({"a": 1, "b": None}, Types.MAP(Types.STRING(), Types.INT())) == "{a=1, b=null}"
    t = Types.ROW([Types.STRING(), Types.LIST(Types.DOUBLE())])
    assert format_for_print(("k", [1.0, 1e10]), t) == "+I[k, [1.0, 1.0E10]]"


# --- prefix ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "subtask,parallelism,identifier,expected",
    [
        (0, 1, None, ""),
        (0, 2, None, "1> "),
        (3, 4, None, "4> "),
        (0, 1, "out", "out> "),
        (1, 2, "out", "out:2> "),
        (1, 2, "", "2> "),
    ],
)
def test_print_prefix(subtask, parallelism, identifier, expected):
    assert print_prefix(subtask, parallelism, identifier) == expected
