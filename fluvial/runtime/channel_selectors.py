"""Channel selectors: how a producing subtask splits one buffer of records over the channels of an edge
(DESIGN 2.1). They run inside tasks, so they live in `runtime/`; the plan side (`graph.partitioners`) only
decides which consumer subtasks an edge connects.

Each works on a whole buffer: `split(values)` returns one list per channel (empty lists allowed), so the
per-record work is a C-level slice where the rule allows (rebalance, rescale) and one dict lookup per record
for hash partitioning. Flink's per-record round robin is kept exactly: record j of the stream goes to channel
(start + j) % n, where start carries over between buffers.

A buffer with event timestamps is split as two columns, values and timestamps, by the same rule
(`split_timestamped`): the key selector sees each value once and no (value, timestamp) pair is built and taken
apart again. A selector without it (shuffle, custom) gets (value, timestamp) pairs through `split`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.key_groups import assign_to_key_group, compute_operator_index_for_key_group
from fluvial.datastream.transformations import PartitionerKind, PartitionerSpec
from fluvial.runtime.key_extraction import fast_key

KEY_CACHE_LIMIT = 1 << 16


class ChannelSelector:
    """Base: `split(values)` → list of per-channel lists; `n` channels."""

    def __init__(self, n: int) -> None:
        self.n = n

    def split(self, values: list[Any]) -> list[list[Any]]:
        raise NotImplementedError

    def split_timestamped(
        self, values: Sequence[Any], timestamps: list[Any]
    ) -> list[tuple[Sequence[Any], list[Any]]] | None:
        """(values, timestamps) per channel by the rule of `split`; None where the rule must see pairs."""
        return None


class ForwardSelector(ChannelSelector):
    def split(self, values: list[Any]) -> list[list[Any]]:
        return [values]


class GlobalSelector(ChannelSelector):
    def split(self, values: list[Any]) -> list[list[Any]]:
        return [values] + [[] for _ in range(self.n - 1)]

    def split_timestamped(
        self, values: Sequence[Any], timestamps: list[Any]
    ) -> list[tuple[Sequence[Any], list[Any]]] | None:
        return [(values, timestamps)] + [([], []) for _ in range(self.n - 1)]


class BroadcastSelector(ChannelSelector):
    def split(self, values: list[Any]) -> list[list[Any]]:
        return [values] * self.n

    def split_timestamped(
        self, values: Sequence[Any], timestamps: list[Any]
    ) -> list[tuple[Sequence[Any], list[Any]]] | None:
        return [(values, timestamps)] * self.n


class RoundRobinSelector(ChannelSelector):
    """Rebalance and rescale: record by record round robin, done with strided slices."""

    def __init__(self, n: int, start: int = 0) -> None:
        super().__init__(n)
        self._next = start % n if n else 0

    def split(self, values: list[Any]) -> list[list[Any]]:
        n = self.n
        if n == 1:
            return [values]
        start = self._next
        out = [values[(channel - start) % n :: n] for channel in range(n)]
        self._next = (start + len(values)) % n
        return out

    def split_timestamped(
        self, values: Sequence[Any], timestamps: list[Any]
    ) -> list[tuple[Sequence[Any], list[Any]]] | None:
        n = self.n
        if n == 1:
            return [(values, timestamps)]
        start = self._next
        self._next = (start + len(values)) % n
        return [(values[(channel - start) % n :: n], timestamps[(channel - start) % n :: n]) for channel in range(n)]


class ShuffleSelector(ChannelSelector):
    def __init__(self, n: int, seed: int | None = None) -> None:
        import random

        super().__init__(n)
        self._random = random.Random(seed)

    def split(self, values: list[Any]) -> list[list[Any]]:
        out: list[list[Any]] = [[] for _ in range(self.n)]
        appends = [channel.append for channel in out]
        for value, channel in zip(values, self._random.choices(range(self.n), k=len(values))):
            appends[channel](value)
        return out


class KeyGroupSelector(ChannelSelector):
    """Hash partitioning by key group: key → key group → the subtask owning that group's range.

    Keys repeat, so the key → channel answer is cached (bounded); the stable hash runs once per distinct key,
    and so does `check_key` (a declared key_type's check, `type_checks.key_checker`), before the key is cached.
    """

    def __init__(
        self,
        n: int,
        key_selector: Callable[[Any], Any],
        max_parallelism: int,
        check_key: Callable[[Any], None] | None = None,
    ) -> None:
        super().__init__(n)
        self._key = key_selector
        self._max_parallelism = max_parallelism
        self._cache: dict[Any, int] = {}
        self._check_key = check_key
        self._checked: set[Any] = set()  # the keys check_keys has checked (one channel: no channel cache to hold them)

    def channel_of_key(self, key: Any) -> int:
        if self._check_key is not None:
            self._check_key(key)
        try:
            channel = self._cache.get(key)
        except TypeError:  # unhashable: assign_to_key_group raises InvalidJobError naming the key
            group = assign_to_key_group(key, self._max_parallelism)
            return compute_operator_index_for_key_group(self._max_parallelism, self.n, group)
        if channel is None:
            group = assign_to_key_group(key, self._max_parallelism)
            channel = compute_operator_index_for_key_group(self._max_parallelism, self.n, group)
            if len(self._cache) >= KEY_CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = channel
        return channel

    def check_keys(self, values: list[Any]) -> None:
        """With one channel nothing is split, but a declared key_type still checks each distinct key: one key
        call and one set lookup per record while every key is known (`issuperset` builds no set), the new keys
        checked once when a buffer brings some."""
        check, checked = self._check_key, self._checked
        if check is None:
            return
        try:
            if checked.issuperset(map(self._key, values)):
                return
            new = set(map(self._key, values)).difference(checked)
        except TypeError:  # an unhashable key: channel_of_key checks it, then raises the clear error
            for value in values:
                self.channel_of_key(self._key(value))
            return
        for key in new:
            check(key)
        if len(checked) + len(new) > KEY_CACHE_LIMIT:
            checked.clear()
        checked.update(new)

    def split(self, values: list[Any]) -> list[list[Any]]:
        if self.n == 1:
            if self._check_key is not None:
                self.check_keys(values)
            return [values]
        out: list[list[Any]] = [[] for _ in range(self.n)]
        appends = [channel.append for channel in out]
        for value, channel in zip(values, self._channels(values)):
            appends[channel](value)
        return out

    def split_timestamped(
        self, values: Sequence[Any], timestamps: list[Any]
    ) -> list[tuple[Sequence[Any], list[Any]]] | None:
        """`split`, carrying each record's timestamp along with its value."""
        n = self.n
        if n == 1:
            if self._check_key is not None:
                self.check_keys(list(values))
            return [(values, timestamps)]
        values_out: list[list[Any]] = [[] for _ in range(n)]
        timestamps_out: list[list[Any]] = [[] for _ in range(n)]
        value_appends = [part.append for part in values_out]
        timestamp_appends = [part.append for part in timestamps_out]
        for value, timestamp, channel in zip(values, timestamps, self._channels(values)):
            value_appends[channel](value)
            timestamp_appends[channel](timestamp)
        out: list[tuple[Sequence[Any], list[Any]]] = list(zip(values_out, timestamps_out))
        return out

    def _channels(self, values: Sequence[Any]) -> list[int]:
        """The channel of each record, in C while every key is cached; the keys new to the cache go through
        `channel_of_key` (its check and stable hash) once each, and the buffer is looked up again."""
        keys = list(map(self._key, values))
        lookup = self._cache.__getitem__
        try:
            return list(map(lookup, keys))
        except KeyError:
            pass
        except TypeError:  # an unhashable key: channel_of_key raises the clear error naming it
            pass
        channel_of_key, cache = self.channel_of_key, self._cache
        try:
            for key in dict.fromkeys(keys):  # in the order of the records: the first misfit is the one reported
                if key not in cache:
                    channel_of_key(key)
            return list(map(lookup, keys))
        except (KeyError, TypeError):  # the cache was cleared on the way, or a key is unhashable
            return [channel_of_key(key) for key in keys]


class CustomSelector(ChannelSelector):
    def __init__(self, n: int, key_selector: Callable[[Any], Any], partition: Callable[[Any, int], int]) -> None:
        super().__init__(n)
        self._key = key_selector
        self._partition = partition

    def split(self, values: list[Any]) -> list[list[Any]]:
        n = self.n
        out: list[list[Any]] = [[] for _ in range(n)]
        for value in values:
            channel = self._partition(self._key(value), n)
            if not isinstance(channel, int) or not 0 <= channel < n:
                raise InvalidJobError(
                    f"custom partitioner returned {channel!r} for {value!r}; it must return an int in [0, {n})"
                )
            out[channel].append(value)
        return out


def _callable(function: Any, method: str) -> Callable[..., Any]:
    bound: Callable[..., Any] = getattr(function, method, function)
    return bound


def build_selector(
    spec: PartitionerSpec,
    n: int,
    max_parallelism: int,
    producer_index: int = 0,
    check_key: Callable[[Any], None] | None = None,
) -> ChannelSelector:
    """Build the live selector of one producing subtask. `max_parallelism` is the consumer's (key groups).
    Round robin starts at a different channel in each producer, so small inputs spread evenly. `check_key`: the
    hash partitioner's check of each distinct key against the key_by's declared key_type."""
    kind = spec.kind
    if kind is PartitionerKind.FORWARD:
        return ForwardSelector(n)
    if kind in (PartitionerKind.REBALANCE, PartitionerKind.RESCALE):
        return RoundRobinSelector(n, start=producer_index)
    if kind is PartitionerKind.HASH:
        return KeyGroupSelector(n, fast_key(_callable(spec.key_selector, "get_key")), max_parallelism, check_key)
    if kind is PartitionerKind.BROADCAST:
        return BroadcastSelector(n)
    if kind is PartitionerKind.SHUFFLE:
        return ShuffleSelector(n)
    if kind is PartitionerKind.GLOBAL:
        return GlobalSelector(n)
    if kind is PartitionerKind.CUSTOM:
        return CustomSelector(
            n, _callable(spec.key_selector, "get_key"), _callable(spec.custom_partitioner, "partition")
        )
    raise InvalidJobError(f"unknown partitioner {kind}")
