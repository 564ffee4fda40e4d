"""Channel selectors (DESIGN 2.1), mostly as hypothesis properties."""

from __future__ import annotations

from collections import Counter
from itertools import chain

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.key_groups import (
    assign_to_key_group,
    compute_operator_index_for_key_group,
)
from fluvial.datastream.functions import KeySelector, Partitioner
from fluvial.datastream.transformations import PartitionerKind, PartitionerSpec
from fluvial.runtime import channel_selectors
from fluvial.runtime.channel_selectors import (
    BroadcastSelector,
    CustomSelector,
    ForwardSelector,
    GlobalSelector,
    KeyGroupSelector,
    RoundRobinSelector,
    ShuffleSelector,
    build_selector,
)

FAST = settings(max_examples=150, deadline=None)
channels = st.integers(1, 9)
buffers = st.lists(st.lists(st.integers(), max_size=25), max_size=6)
keys = st.one_of(st.integers(), st.text(max_size=6), st.tuples(st.integers(), st.text(max_size=3)), st.none())


def _key_mod(value):
    return value % 7


def _by_key(value, n):
    return value % n


SPECS = [
    PartitionerSpec(PartitionerKind.REBALANCE),
    PartitionerSpec(PartitionerKind.RESCALE),
    PartitionerSpec(PartitionerKind.HASH, key_selector=_key_mod),
    PartitionerSpec(PartitionerKind.SHUFFLE),
    PartitionerSpec(PartitionerKind.GLOBAL),
    PartitionerSpec(PartitionerKind.CUSTOM, key_selector=_key_mod, custom_partitioner=_by_key),
]


# -- round robin --------------------------------------------------------------------------------------------------


@FAST
@given(n=channels, start=st.integers(0, 30), batches=buffers)
def test_round_robin_sends_record_j_to_start_plus_j_over_buffers(n, start, batches) -> None:
    selector = RoundRobinSelector(n, start=start)
    total = sum(len(b) for b in batches)
    seen: list[tuple[int, int]] = []  # (global record index, channel)
    offset = 0
    for batch in batches:
        indexed = list(range(offset, offset + len(batch)))  # the values are their global indexes
        out = selector.split(indexed)
        assert len(out) == n
        for channel, values in enumerate(out):
            assert values == sorted(values)  # order within a channel is kept
            seen.extend((j, channel) for j in values)
        offset += len(batch)
    assert sorted(j for j, _ in seen) == list(range(total))
    assert all(channel == (start + j) % n for j, channel in seen)


@FAST
@given(n=st.integers(2, 9), producer=st.integers(0, 20))
def test_rebalance_in_producer_i_starts_at_channel_i(n, producer) -> None:
    for kind in (PartitionerKind.REBALANCE, PartitionerKind.RESCALE):
        selector = build_selector(PartitionerSpec(kind), n, 128, producer_index=producer)
        out = selector.split(["first"])
        assert out[producer % n] == ["first"]


def test_round_robin_spreads_evenly() -> None:
    out = RoundRobinSelector(4).split(list(range(10)))
    assert [len(c) for c in out] == [3, 3, 2, 2]
    assert out[0] == [0, 4, 8]


# -- every selector keeps every record ----------------------------------------------------------------------------


@FAST
@given(spec=st.sampled_from(SPECS), n=channels, producer=st.integers(0, 5), batch=st.lists(st.integers(), max_size=40))
def test_split_is_a_permutation_of_the_input(spec, n, producer, batch) -> None:
    selector = build_selector(spec, n, 128, producer_index=producer)
    out = selector.split(list(batch))
    assert len(out) == n
    assert Counter(chain.from_iterable(out)) == Counter(batch)


@FAST
@given(
    spec=st.sampled_from([*SPECS, PartitionerSpec(PartitionerKind.BROADCAST)]),
    n=channels,
    producer=st.integers(0, 5),
    batches=buffers,
)
def test_a_timestamped_split_sends_each_timestamp_with_its_value(spec, n, producer, batches) -> None:
    """Values and timestamps split as two columns go where the values alone go, each timestamp beside its value,
    over several buffers (round robin carries its position on from one buffer to the next in both forms)."""
    by_columns = build_selector(spec, n, 128, producer_index=producer)
    by_values = build_selector(spec, n, 128, producer_index=producer)
    for batch in batches:
        columns = by_columns.split_timestamped(batch, [-value for value in batch])
        if columns is None:  # shuffle and custom see (value, timestamp) pairs: the writer's fallback
            assert spec.kind in (PartitionerKind.SHUFFLE, PartitionerKind.CUSTOM)
            return
        assert [list(values) for values, _ in columns] == [list(part) for part in by_values.split(list(batch))]
        for values, timestamps in columns:
            assert list(timestamps) == [-value for value in values]


def test_a_timestamped_split_refuses_an_unhashable_key_clearly() -> None:
    selector = KeyGroupSelector(3, lambda value: [value], 128)
    with pytest.raises(InvalidJobError, match="unhashable key"):
        selector.split_timestamped(["record"], [1])


@FAST
@given(n=channels, batch=st.lists(st.integers(), max_size=40))
def test_broadcast_sends_everything_to_every_channel(n, batch) -> None:
    out = build_selector(PartitionerSpec(PartitionerKind.BROADCAST), n, 128).split(list(batch))
    assert len(out) == n
    assert all(channel == batch for channel in out)


@FAST
@given(n=channels, batch=st.lists(st.integers(), max_size=40))
def test_global_sends_everything_to_channel_zero(n, batch) -> None:
    out = GlobalSelector(n).split(list(batch))
    assert out[0] == batch
    assert out[1:] == [[]] * (n - 1)


@FAST
@given(batch=st.lists(st.integers(), max_size=40))
def test_forward_keeps_the_buffer(batch) -> None:
    assert ForwardSelector(1).split(list(batch)) == [batch]


def test_shuffle_with_a_seed_is_repeatable_and_uses_several_channels() -> None:
    batch = list(range(200))
    first, second = ShuffleSelector(4, seed=7).split(batch), ShuffleSelector(4, seed=7).split(batch)
    assert first == second
    assert all(len(channel) > 20 for channel in first)


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        (PartitionerKind.FORWARD, ForwardSelector),
        (PartitionerKind.REBALANCE, RoundRobinSelector),
        (PartitionerKind.RESCALE, RoundRobinSelector),
        (PartitionerKind.HASH, KeyGroupSelector),
        (PartitionerKind.BROADCAST, BroadcastSelector),
        (PartitionerKind.SHUFFLE, ShuffleSelector),
        (PartitionerKind.GLOBAL, GlobalSelector),
        (PartitionerKind.CUSTOM, CustomSelector),
    ],
)
def test_build_selector_kinds(kind, cls) -> None:
    spec = PartitionerSpec(kind, key_selector=_key_mod, custom_partitioner=_by_key)
    selector = build_selector(spec, 3, 128)
    assert type(selector) is cls
    assert selector.n == 3


# -- hash (key groups) --------------------------------------------------------------------------------------------


@FAST
@given(
    n=channels,
    extra=st.integers(0, 200),
    values=st.lists(keys, max_size=40),
)
def test_key_group_channel_follows_the_key_group_rule(n, extra, values) -> None:
    max_parallelism = n + extra
    selector = KeyGroupSelector(n, identity_key, max_parallelism)
    out = selector.split(list(values) + list(values))  # every key twice: the cached path too
    channel_of: dict = {}
    for channel, members in enumerate(out):
        for key in members:
            expected = compute_operator_index_for_key_group(
                max_parallelism, n, assign_to_key_group(key, max_parallelism)
            )
            assert channel == expected
            assert channel_of.setdefault(key, channel) == channel  # equal keys, one channel
    assert Counter(chain.from_iterable(out)) == Counter(list(values) * 2)


def identity_key(value):
    return value


def test_equal_keys_of_different_records_share_a_channel() -> None:
    selector = KeyGroupSelector(5, lambda record: record[0], 128)
    records = [(k, i) for i in range(10) for k in ("a", "b", "c", "d")]
    out = selector.split(records)
    owners = {key: {c for c, members in enumerate(out) for k, _ in members if k == key} for key in "abcd"}
    assert all(len(channels_of_key) == 1 for channels_of_key in owners.values())


def test_key_group_answers_stay_right_after_the_cache_is_cleared(monkeypatch) -> None:
    monkeypatch.setattr(channel_selectors, "KEY_CACHE_LIMIT", 3)
    selector = KeyGroupSelector(4, identity_key, 64)
    values = list(range(50)) * 2
    out = selector.split(values)
    for channel, members in enumerate(out):
        assert all(channel == compute_operator_index_for_key_group(64, 4, assign_to_key_group(k, 64)) for k in members)
    assert len(selector._cache) <= 3


def test_hash_uses_a_key_selector_object() -> None:
    class First(KeySelector):
        def get_key(self, value):
            return value[0]

    spec = PartitionerSpec(PartitionerKind.HASH, key_selector=First())
    out = build_selector(spec, 3, 128).split([("k", 1), ("k", 2)])
    assert sum(1 for channel in out if channel) == 1


@pytest.mark.parametrize("key", [[1, 2], {"a": 1}, ("t", [1])])
def test_an_unhashable_key_is_refused_clearly(key) -> None:
    selector = KeyGroupSelector(3, lambda value: key, 128)
    with pytest.raises(InvalidJobError, match="unhashable key"):
        selector.split(["record"])
    with pytest.raises(InvalidJobError, match="unhashable key"):
        selector.channel_of_key(key)


# -- custom -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [3, -1, 10, "0", None, 1.0])
def test_custom_partitioner_out_of_range_is_refused(answer) -> None:
    selector = CustomSelector(3, identity_key, lambda key, n: answer)
    with pytest.raises(InvalidJobError, match=r"custom partitioner returned .*\[0, 3\)"):
        selector.split(["x"])


def test_custom_partitioner_routes_by_its_answer() -> None:
    class Modulo(Partitioner):
        def partition(self, key, num_partitions):
            return key % num_partitions

    class Double(KeySelector):
        def get_key(self, value):
            return value * 2

    spec = PartitionerSpec(PartitionerKind.CUSTOM, key_selector=Double(), custom_partitioner=Modulo())
    out = build_selector(spec, 3, 128).split([0, 1, 2, 3])
    assert out == [[0, 3], [2], [1]]
