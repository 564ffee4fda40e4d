"""Key selectors that only index their record run as itemgetters; every other selector runs as written."""

from __future__ import annotations

import operator

import pytest

from fluvial.datastream.functions import KeySelector
from fluvial.runtime.key_extraction import fast_key


def first(pair):
    return pair[0]


class SecondField(KeySelector):
    def get_key(self, value):
        return value[1]


def _closure_key():
    index = 0
    return lambda value: value[index]


def _with_default(value, index=0):
    return value[index]


def _nested(value):
    return value[0][1]


def _generated(value):
    yield value[0]


def _logged(value):
    print(value)
    return value[0]


@pytest.mark.parametrize(
    ("selector", "index"),
    [(first, 0), (lambda row: row["name"], "name"), (SecondField().get_key, 1), (lambda t: t[-1], -1)],
)
def test_a_selector_that_indexes_its_record_by_a_constant_becomes_an_itemgetter(selector, index) -> None:
    fast = fast_key(selector)
    assert type(fast) is operator.itemgetter
    for record in [("a", 1, 2), {"name": "x", 1: "y", -1: "z"}]:
        try:
            expected = selector(record)
        except (LookupError, TypeError) as error:
            with pytest.raises(type(error)):
                fast(record)
        else:
            assert fast(record) == expected


@pytest.mark.parametrize(
    "selector",
    [
        _closure_key(),
        _with_default,
        _nested,
        _generated,
        _logged,
        lambda *values: values[0],
        lambda value: value,
        lambda value: (value[0], value[1]),
        len,
    ],
)
def test_any_other_selector_runs_as_written(selector) -> None:
    assert fast_key(selector) is selector


def test_a_record_that_cannot_be_indexed_fails_as_under_the_selector() -> None:
    with pytest.raises(TypeError, match="not subscriptable"):
        first(5)
    with pytest.raises(TypeError, match="not subscriptable"):
        fast_key(first)(5)
