"""Declared types shape values as PyFlink's serializers do: tuples become Rows with field names, floats are
rounded to 32 bits, and a value that does not fit names its field."""

from __future__ import annotations

import datetime
import struct
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common import Row, RowKind, Types
from fluvial.common.type_conversion import TypeMismatch, converter_for, narrowing_converter_for

PERSON = Types.ROW_NAMED(["name", "age", "tags"], [Types.STRING(), Types.INT(), Types.LIST(Types.STRING())])


def test_untyped_and_pickled_values_need_no_converter():
    assert converter_for(None) is None
    assert converter_for(Types.PICKLED_BYTE_ARRAY()) is None


def test_a_tuple_becomes_a_named_row_with_attribute_access():
    row = converter_for(PERSON)(("ada", 36, ["x"]))
    assert isinstance(row, Row)
    assert (row.name, row["age"], row[2]) == ("ada", 36, ["x"])
    assert row.get_row_kind() is RowKind.INSERT


def test_positional_rows_are_named_f0_f1_and_keep_their_kind():
    source = Row.of_kind(RowKind.DELETE, 1, "a")
    row = converter_for(Types.ROW([Types.INT(), Types.STRING()]))(source)
    assert row.f0 == 1 and row.f1 == "a"
    assert row.get_row_kind() is RowKind.DELETE


def test_nested_rows_tuples_maps_and_lists_are_shaped_all_the_way_down():
    inner = Types.ROW_NAMED(["x"], [Types.FLOAT()])
    declared = Types.TUPLE([Types.MAP(Types.STRING(), inner), Types.OBJECT_ARRAY(inner)])
    value = converter_for(declared)([{"k": (0.1,)}, [(0.5,)]])
    assert isinstance(value, tuple)
    assert value[0]["k"].x == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert value[1][0].x == 0.5


def test_float_is_rounded_to_32_bits_as_pyflink_reads_it_back_and_double_is_not():
    assert converter_for(Types.FLOAT())(0.1) == 0.10000000149011612
    assert converter_for(Types.DOUBLE())(0.1) == 0.1
    assert converter_for(Types.DOUBLE())(3) == 3.0 and isinstance(converter_for(Types.DOUBLE())(3), float)


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_integers_fit_exactly_their_java_range(value):
    for declared, bits in ((Types.BYTE(), 8), (Types.SHORT(), 16), (Types.INT(), 32), (Types.LONG(), 64)):
        fits = -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
        if fits:
            assert converter_for(declared)(value) == value
        else:
            with pytest.raises(TypeMismatch, match="range"):
                converter_for(declared)(value)


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_from_collection_narrowing_wraps_around_as_java_does(value):
    for declared, fmt in ((Types.BYTE(), "<b"), (Types.SHORT(), "<h"), (Types.INT(), "<i"), (Types.LONG(), "<q")):
        size = struct.calcsize(fmt)
        expected = struct.unpack(fmt, (value % (1 << (8 * size))).to_bytes(size, "little"))[0]
        assert narrowing_converter_for(declared)(value) == expected


def test_narrowing_matches_pyflinks_from_collection_and_leaves_output_types_strict():
    declared = Types.ROW([Types.SHORT(), Types.INT()])
    assert tuple(narrowing_converter_for(declared)((43878, 9147483648))) == (-21658, 557549056)
    with pytest.raises(TypeMismatch, match="16-bit range"):
        converter_for(declared)((43878, 1))  # built after the narrowing one: the mode does not leak
    with pytest.raises(TypeMismatch, match="expected an int"):
        narrowing_converter_for(Types.SHORT())("1")


@pytest.mark.parametrize(
    "declared, value",
    [
        (Types.INT(), "1"),
        (Types.INT(), True),
        (Types.STRING(), 1),
        (Types.BOOLEAN(), 1),
        (Types.FLOAT(), "1.0"),
        (Types.CHAR(), "ab"),
        (Types.BIG_DEC(), 1.5),
        (Types.SQL_DATE(), datetime.datetime(2024, 1, 1)),
        (Types.ROW([Types.INT()]), (1, 2)),
        (Types.TUPLE([Types.INT()]), 5),
        (Types.MAP(Types.STRING(), Types.INT()), [1]),
        (Types.LIST(Types.INT()), "abc"),
    ],
)
def test_a_value_that_does_not_fit_is_refused(declared, value):
    with pytest.raises(TypeMismatch):
        converter_for(declared)(value)


def test_the_mismatch_names_the_nested_field():
    declared = Types.ROW_NAMED(["user"], [Types.ROW_NAMED(["id", "score"], [Types.LONG(), Types.DOUBLE()])])
    with pytest.raises(TypeMismatch) as caught:
        converter_for(declared)(((7, "high"),))
    assert caught.value.path == "'user'.score"


def test_none_fits_every_field_and_other_values_pass_unchanged():
    assert converter_for(PERSON)((None, None, None)).as_dict() == {"name": None, "age": None, "tags": None}
    assert converter_for(Types.BIG_DEC())(Decimal("1.5")) == Decimal("1.5")
    assert converter_for(Types.PRIMITIVE_ARRAY(Types.BYTE()))(b"\x01") == b"\x01"
