"""Declared types checked per buffer at a chain's boundary: the generated check accepts exactly what the type's
converter accepts, hands on the buffer itself when every value fits, converts the values that need it (a list
declared TUPLE), and refuses a misfit naming the operator and the field in one sentence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common import Types
from fluvial.common.errors import InvalidJobError
from fluvial.common.type_checks import batch_checker, checked_at_boundary
from fluvial.common.type_conversion import TypeMismatch, converter_for

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
CHECKED = [
    Types.LONG(),
    Types.INT(),
    Types.SHORT(),
    Types.BYTE(),
    Types.STRING(),
    Types.BOOLEAN(),
    Types.CHAR(),
    Types.BIG_INT(),
    PAIR,
    Types.TUPLE([Types.INT(), Types.TUPLE([Types.STRING(), Types.BOOLEAN()])]),
    Types.TUPLE([Types.PICKLED_BYTE_ARRAY(), Types.INT()]),
]


@pytest.mark.parametrize("declared", CHECKED, ids=repr)
def test_check_only_types_are_checked_at_the_boundary(declared):
    assert checked_at_boundary(declared) and batch_checker(declared, "op") is not None


@pytest.mark.parametrize(
    "declared",
    [
        None,
        Types.PICKLED_BYTE_ARRAY(),
        Types.FLOAT(),
        Types.DOUBLE(),
        Types.ROW([Types.INT()]),
        Types.TUPLE([Types.STRING(), Types.FLOAT()]),
        Types.LIST(Types.INT()),
    ],
    ids=repr,
)
def test_types_that_reshape_or_take_anything_have_no_boundary_check(declared):
    assert not checked_at_boundary(declared) and batch_checker(declared, "op") is None


def test_a_buffer_that_fits_is_handed_on_as_it_is():
    values = [("a", 1), ("b", -(2**63))]
    assert batch_checker(PAIR, "op")(values) is values
    assert batch_checker(PAIR, "op")([None, ("c", 3)]) == [None, ("c", 3)]  # None fits every type


def test_values_that_need_shaping_are_shaped_and_the_rest_kept():
    assert batch_checker(PAIR, "op")([("a", 1), ["b", 2]]) == [("a", 1), ("b", 2)]


@pytest.mark.parametrize(
    ("declared", "value", "where"),
    [
        (PAIR, ("a", "b"), "field 'f1'"),
        (PAIR, ("a", 2**63), "field 'f1'"),
        (PAIR, ("a",), "it has 1 fields, the type 2"),
        (Types.INT(), 2**31, "a value that does not fit"),
        (Types.STRING(), 1, "a value that does not fit"),
    ],
)
def test_a_misfit_is_one_sentence_naming_operator_and_field(declared, value, where):
    with pytest.raises(InvalidJobError) as refused:
        batch_checker(declared, "to pairs")([value])
    message = str(refused.value)
    assert message.startswith("'to pairs' produced ") and where in message
    assert message.count("'to pairs'") == 1 and "whose the" not in message and " a Integer" not in message


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=3)
    | st.floats(allow_nan=False),
    lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CHECKED), st.lists(_VALUES, max_size=4))
def test_the_check_accepts_exactly_what_the_converter_accepts(declared, values):
    convert = converter_for(declared)
    try:
        expected = [convert(value) for value in values]
    except TypeMismatch:
        expected = None
    try:
        got = batch_checker(declared, "op")(values)
    except InvalidJobError:
        got = None
    assert got == expected
    if expected is not None:
        assert [type(value) for value in got] == [type(value) for value in expected]


@pytest.mark.parametrize(
    ("declared", "values", "fits"),
    [
        # ints around the one-digit fast path and the declared bounds
        (Types.TUPLE([Types.INT()]), [(2**30 - 1,), (2**30,), (-(2**30),), (2**31 - 1,), (-(2**31),)], True),
        (Types.TUPLE([Types.INT()]), [(1,), (2**31,)], False),
        (Types.TUPLE([Types.LONG(), Types.INT()]), [(2**63 - 1, -(2**31)), (-(2**63), 2**30)], True),
        (Types.TUPLE([Types.LONG(), Types.INT()]), [(2**63, 1)], False),
        (Types.TUPLE([Types.LONG(), Types.INT()]), [(True, 1)], False),
        # a tuple of another length after fitting ones leaves the unpacking loop for the converter
        (PAIR, [("a", 1), ("b", 2, 3)], False),
        (PAIR, [("a", 1), ()], False),
        (Types.TUPLE([Types.PICKLED_BYTE_ARRAY(), Types.INT()]), [(object, 1), ([], 2)], True),
    ],
)
def test_tuples_are_checked_field_by_field_and_by_length(declared, values, fits):
    check = batch_checker(declared, "op")
    if fits:
        assert check(values) is values
    else:
        with pytest.raises(InvalidJobError):
            check(values)
