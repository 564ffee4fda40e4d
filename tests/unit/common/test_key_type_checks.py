"""`key_by(..., key_type=...)`'s check of a key against its declared type: nothing to check for an undeclared or
pickled type, a fitting key passes, and a misfit raises one sentence naming the key_by, the key and the type."""

from __future__ import annotations

import pytest

from fluvial.common import Row, Types
from fluvial.common.errors import InvalidJobError
from fluvial.common.type_checks import key_checker
from fluvial.runtime.channel_selectors import KeyGroupSelector


def test_an_undeclared_or_pickled_key_type_checks_nothing():
    assert key_checker(None, "key_by(<lambda>)") is None
    assert key_checker(Types.PICKLED_BYTE_ARRAY(), "key_by(<lambda>)") is None


@pytest.mark.parametrize(
    ("key_type", "key"),
    [
        (Types.STRING(), "a"),
        (Types.LONG(), 7),
        (Types.INT(), None),
        (Types.TUPLE([Types.STRING(), Types.INT()]), ("a", 1)),
        (Types.ROW([Types.STRING(), Types.INT()]), Row("a", 1)),
        (Types.DOUBLE(), 1.5),
    ],
)
def test_a_fitting_key_passes(key_type, key):
    check = key_checker(key_type, "key_by(<lambda>)")
    assert check is not None
    check(key)


@pytest.mark.parametrize(
    ("key_type", "key", "shown"),
    [
        (Types.STRING(), 7, "7 is not a String"),
        (Types.INT(), 2**40, f"{2**40} is not an Integer"),
        (Types.TUPLE([Types.STRING(), Types.INT()]), ("a", "b"), "'b' is not an Integer"),
        (Types.ROW([Types.STRING(), Types.INT()]), "ab", "'ab'"),
    ],
)
def test_a_misfit_names_the_key_by_the_key_and_the_type(key_type, key, shown):
    check = key_checker(key_type, "key_by(by_word)")
    with pytest.raises(InvalidJobError) as caught:
        check(key)
    message = str(caught.value)
    assert message.startswith("'key_by(by_word)' produced a key")
    assert f"declared key_type {key_type!r}" in message and shown in message
    assert message.count(". ") == 0  # one sentence


def test_the_hash_partitioner_checks_each_distinct_key_once_also_with_one_channel():
    seen: list = []

    def check(key):
        seen.append(key)

    for channels in (1, 3):
        seen.clear()
        selector = KeyGroupSelector(channels, lambda v: v % 2, 128, check)
        parts = selector.split([1, 2, 3, 4, 5])
        assert sorted(v for part in parts for v in part) == [1, 2, 3, 4, 5]
        assert sorted(seen) == [0, 1]
