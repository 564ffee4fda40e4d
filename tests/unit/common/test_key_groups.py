"""Key -> key group -> subtask: the ranges, their inverse, stability across processes and spreading."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import subprocess
import sys
from collections import Counter, namedtuple
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.key_groups import (
    DEFAULT_MAX_PARALLELISM,
    UPPER_BOUND_MAX_PARALLELISM,
    assign_key_to_parallel_operator,
    assign_to_key_group,
    compute_operator_index_for_key_group,
    default_max_parallelism,
    key_group_range_for_operator,
    murmur_mix,
    stable_hash,
    validate_parallelism,
)
from fluvial.common.row import Row, RowKind
from fluvial.common.time import Duration

REPO_ROOT = Path(__file__).resolve().parents[3]


@st.composite
def parallelism_pairs(draw: st.DrawFn) -> tuple[int, int]:
    max_parallelism = draw(st.integers(1, UPPER_BOUND_MAX_PARALLELISM))
    parallelism = draw(st.integers(1, max_parallelism))
    return max_parallelism, parallelism


def test_constants() -> None:
    assert DEFAULT_MAX_PARALLELISM == 128
    assert UPPER_BOUND_MAX_PARALLELISM == 32768


@settings(max_examples=60, deadline=None)
@given(parallelism_pairs())
def test_ranges_partition_all_key_groups(pair: tuple[int, int]) -> None:
    max_parallelism, parallelism = pair
    expected_start = 0
    for index in range(parallelism):
        kg_range = key_group_range_for_operator(max_parallelism, parallelism, index)
        assert kg_range.step == 1
        assert kg_range.start == expected_start, "ranges must be contiguous, without gaps or overlaps"
        assert len(kg_range) >= 1, "with parallelism <= max parallelism every subtask owns a key group"
        expected_start = kg_range.stop
    assert expected_start == max_parallelism


@settings(max_examples=200, deadline=None)
@given(parallelism_pairs(), st.lists(st.floats(0, 1, exclude_max=True), max_size=20))
def test_operator_index_agrees_with_range_boundaries(pair: tuple[int, int], fractions: list[float]) -> None:
    max_parallelism, parallelism = pair
    indices = {0, parallelism - 1, *(int(f * parallelism) for f in fractions)}
    for index in indices:
        kg_range = key_group_range_for_operator(max_parallelism, parallelism, index)
        for key_group in (kg_range[0], kg_range[-1]):
            assert compute_operator_index_for_key_group(max_parallelism, parallelism, key_group) == index
        if kg_range.start > 0:
            assert compute_operator_index_for_key_group(max_parallelism, parallelism, kg_range.start - 1) == index - 1
        if kg_range.stop < max_parallelism:
            assert compute_operator_index_for_key_group(max_parallelism, parallelism, kg_range.stop) == index + 1


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 300).flatmap(lambda m: st.tuples(st.just(m), st.integers(1, m))))
def test_operator_index_agrees_with_ranges_for_every_key_group(pair: tuple[int, int]) -> None:
    max_parallelism, parallelism = pair
    owner = {}
    for index in range(parallelism):
        for key_group in key_group_range_for_operator(max_parallelism, parallelism, index):
            owner[key_group] = index
    assert sorted(owner) == list(range(max_parallelism))
    for key_group, index in owner.items():
        assert compute_operator_index_for_key_group(max_parallelism, parallelism, key_group) == index


def test_known_ranges() -> None:
    # 128 key groups over 3 subtasks: ceil(0)=0, ceil(42.67)=43, ceil(85.33)=86, 128
    assert [key_group_range_for_operator(128, 3, i) for i in range(3)] == [range(0, 43), range(43, 86), range(86, 128)]


def test_operator_index_outside_parallelism_is_rejected() -> None:
    with pytest.raises(ValueError, match="outside range"):
        key_group_range_for_operator(128, 4, 4)


keys = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text() | st.binary(),
    lambda children: st.tuples(children, children) | st.frozensets(st.text() | st.integers(), max_size=4),
    max_leaves=6,
)


@settings(max_examples=100, deadline=None)
@given(keys, st.integers(1, UPPER_BOUND_MAX_PARALLELISM))
def test_key_group_is_within_range(key: object, max_parallelism: int) -> None:
    key_group = assign_to_key_group(key, max_parallelism)
    assert 0 <= key_group < max_parallelism
    assert 0 <= stable_hash(key) <= 0xFFFFFFFF


@settings(max_examples=100, deadline=None)
@given(keys, parallelism_pairs())
def test_key_goes_to_the_subtask_owning_its_key_group(key: object, pair: tuple[int, int]) -> None:
    max_parallelism, parallelism = pair
    subtask = assign_key_to_parallel_operator(key, max_parallelism, parallelism)
    assert assign_to_key_group(key, max_parallelism) in key_group_range_for_operator(
        max_parallelism, parallelism, subtask
    )


def test_equal_keys_of_different_types_share_a_key_group() -> None:
    # 1, True and 1.0 are one dict key; they must be one key group too.
    assert assign_to_key_group(1, 128) == assign_to_key_group(True, 128) == assign_to_key_group(1.0, 128)
    assert stable_hash(Decimal("2.5")) == stable_hash(2.5) == stable_hash(Fraction(5, 2))
    Point = namedtuple("Point", "x y")
    assert stable_hash(Point("a", 2)) == stable_hash(("a", 2))

    class Color(enum.IntEnum):
        RED = 7

    assert stable_hash(Color.RED) == stable_hash(7)


def test_frozenset_hash_ignores_iteration_order() -> None:
    a = frozenset(["x", "y", "z", "w"])
    b = frozenset(["w", "z", "y", "x"])
    assert stable_hash(a) == stable_hash(b)
    assert stable_hash(("x", "y")) != stable_hash(("y", "x")), "tuples are ordered"


def test_dataclass_keys_hash_by_their_compared_fields() -> None:
    @dataclasses.dataclass(frozen=True)
    class Tag:
        labels: frozenset
        note: str = dataclasses.field(default="", compare=False)

    assert stable_hash(Tag(frozenset({"a", "b"}), "x")) == stable_hash(Tag(frozenset({"b", "a"}), "y"))


def test_row_keys_hash_like_their_equality() -> None:
    assert stable_hash(Row("a", 1)) == stable_hash(Row("a", 1))
    assert stable_hash(Row(name="a")) != stable_hash(Row("a")), "a named row never equals a positional one"
    assert stable_hash(Row.of_kind(RowKind.DELETE, "a", 1)) != stable_hash(Row("a", 1))
    with pytest.raises(InvalidJobError, match="contains a list"):
        stable_hash(Row([1], 2))


def test_nan_has_a_fixed_hash() -> None:
    assert stable_hash(float("nan")) == stable_hash(float("nan"))
    assert stable_hash(Decimal("sNaN")) == stable_hash(Decimal("NaN")), "signalling NaN must not raise"


@pytest.mark.parametrize(
    ("key", "type_name"),
    [([1, 2], "list"), ({"a": 1}, "dict"), ({1}, "set"), (bytearray(b"x"), "bytearray")],
)
def test_unhashable_key_is_a_clear_error(key: object, type_name: str) -> None:
    with pytest.raises(InvalidJobError, match=f"unhashable key of type {type_name} .*return a tuple or a string"):
        assign_to_key_group(key, 128)


def test_unhashable_part_of_a_tuple_is_named() -> None:
    with pytest.raises(InvalidJobError, match=r"of type tuple .*contains a list"):
        stable_hash(("a", [1]))


def test_unhashable_dataclass_is_rejected() -> None:
    @dataclasses.dataclass
    class Mutable:
        x: int

    with pytest.raises(InvalidJobError, match="unhashable key of type Mutable"):
        stable_hash(Mutable(1))


def test_murmur_mix_is_a_non_negative_32_bit_avalanche() -> None:
    assert murmur_mix(0) == 0
    values = [murmur_mix(i) for i in range(-5, 1000)]
    assert all(0 <= v <= 0xFFFFFFFF for v in values)
    assert len(set(values)) == len(values), "fmix32 is a bijection on 32-bit values"
    assert bin(murmur_mix(1) ^ murmur_mix(2)).count("1") > 8, "neighbouring inputs differ in many bits"


def test_consecutive_ints_hit_every_key_group() -> None:
    counts = Counter(assign_to_key_group(i, 128) for i in range(10_000))
    assert len(counts) == 128
    assert max(counts.values()) < 2 * 10_000 / 128


def test_multiples_of_max_parallelism_still_spread() -> None:
    assert len({assign_to_key_group(i * 128, 128) for i in range(2_000)}) == 128


STABILITY_KEYS_SOURCE = """[
    "", "hello", "naïve ✓", "\\udc80", b"", b"bytes\\x00\\xff", 0, -1, 2**70, True, None, 1.5,
    ("user", 42), ("a", ("b", b"c"), None), frozenset({"x", "y", "z", "q"}), Duration(250),
    Row("a", 1), Row(name="b", n=2),
]"""

STABILITY_SCRIPT = f"""
import json
from fluvial.common.key_groups import assign_to_key_group, stable_hash
from fluvial.common.row import Row
from fluvial.common.time import Duration
keys = {STABILITY_KEYS_SOURCE}
groups = [[stable_hash(k), assign_to_key_group(k, 128), assign_to_key_group(k, 32768)] for k in keys]
print(json.dumps({{"salted": hash("hello"), "groups": groups}}))
"""


def _run_with_hash_seed(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", STABILITY_SCRIPT], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
    )
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout)


def test_key_groups_are_identical_in_processes_with_other_hash_seeds() -> None:
    keys = eval(STABILITY_KEYS_SOURCE, {"Duration": Duration, "Row": Row})  # the same literal the children evaluate
    here = [[stable_hash(k), assign_to_key_group(k, 128), assign_to_key_group(k, 32768)] for k in keys]
    first, second = _run_with_hash_seed("123"), _run_with_hash_seed("4242")
    assert first["salted"] != second["salted"], "the seeds must change str hashing, or the test proves nothing"
    assert first["groups"] == here
    assert second["groups"] == here


@pytest.mark.parametrize(
    ("parallelism", "expected"),
    [(1, 128), (85, 128), (86, 256), (100, 256), (1000, 2048), (30000, 32768), (32768, 32768)],
)
def test_default_max_parallelism(parallelism: int, expected: int) -> None:
    assert default_max_parallelism(parallelism) == expected


def test_validate_parallelism_accepts_and_returns_effective_max() -> None:
    assert validate_parallelism(8, None, "Map") == 128
    assert validate_parallelism(8, 8, "Map") == 8
    assert validate_parallelism(1, UPPER_BOUND_MAX_PARALLELISM, "Map") == UPPER_BOUND_MAX_PARALLELISM


@pytest.mark.parametrize(
    ("parallelism", "max_parallelism", "message"),
    [
        (0, None, r"parallelism of 'Map' is 0: set_parallelism\(...\) to 1 or more"),
        (-1, 128, r"parallelism of 'Map' is -1"),
        (
            8,
            4,
            r"set_max_parallelism\(...\) of 'Map' is 4, below its parallelism 8: raise max parallelism to at "
            r"least 8",
        ),
        (1, 0, r"set_max_parallelism\(...\) of 'Map' is 0: use a value from 1 to 32768"),
        (1, 40000, r"is 40000, above the upper bound 32768: use at most 32768"),
        (40000, None, r"parallelism of 'Map' is 40000, above the largest supported max parallelism 32768"),
    ],
)
def test_validate_parallelism_errors_name_value_and_fix(
    parallelism: int, max_parallelism: int | None, message: str
) -> None:
    with pytest.raises(InvalidJobError, match=message):
        validate_parallelism(parallelism, max_parallelism, "Map")
