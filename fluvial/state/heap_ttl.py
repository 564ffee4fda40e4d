"""State time-to-live for the heap backend: Flink's TTL state decorators, as handles over the backend's dicts.

The tables of a state with TTL hold the layout of `fluvial.state.ttl` (TtlValues with their last-access time).
States without TTL never meet any of this: the backend builds its plain handles for them, so TTL costs nothing
unless a descriptor asks for it.

Expiry (Flink's rule): a value has expired once `timestamp + ttl <= now`, where `now` is the backend's
processing-time clock (`ttl_clock`), read once per handle call.

Expired values are removed in three places:
1. on access: a read that meets an expired value removes it (NeverReturnExpired hides it; with
   ReturnExpiredIfNotCleanedUp the read hands it out that one last time);
2. incrementally: before each handle call (and, if asked, whenever the current key changes) an
   IncrementalCleanup cursor checks the next N entries of the state's table, whatever their key;
3. in snapshots, with `cleanup_full_snapshot()`: expired values are left out of the snapshot (live state keeps
   them until 1. or 2. removes them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeGuard

from fluvial.common.errors import StateError
from fluvial.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    StateDescriptor,
    StateKind,
    ValueState,
)
from fluvial.state.backend import NO_KEY, no_key_error
from fluvial.state.ttl import TtlLayout, TtlPolicy, TtlValue

if TYPE_CHECKING:
    from fluvial.state.heap import HeapKeyedStateBackend

_MISSING: Any = object()


class IncrementalCleanup:
    """Flink's TtlIncrementalCleanup: a cursor over one TTL state's keys that drops expired values N at a time.

    `run(now)` checks the next `size` keys (any keys, the current one included) and removes what expired there,
    whatever the state's visibility - a value removed here is "cleaned up", so ReturnExpiredIfNotCleanedUp no
    longer returns it. A dict cannot be iterated while it changes, so a round walks a copy of the key list taken
    when the round starts: keys added later are visited next round, keys removed meanwhile are skipped (they
    still count towards `size`). As in Flink, a run that finds the round finished starts the next one, and a run
    stops at the end of a round. Cost: one key copied per key checked, amortized.

    Beyond Flink - idling: checking entries costs far more in Python than in Java (about 4x the cost of a plain
    state access at Flink's default of 5), and it is wasted while nothing can have expired. A finished round
    knows a lower bound of every stored timestamp - the oldest one it kept, or the round's start time for values
    written since (writes stamp the current time) - so runs return at once until `bound + ttl`, when the oldest
    value may expire. Hazard: this assumes processing time does not go back. If the clock jumps back, values
    written after the jump carry older stamps than the bound and are cleaned up late (reads still never return
    them wrongly: every read checks expiry itself). `reset()` forgets the bound; the backend calls it when a
    restore writes old timestamps into the table.
    """

    __slots__ = ("_table", "_layout", "_ttl", "_size", "_keys", "_position", "_floor", "_idle_until")

    def __init__(self, table: dict[Any, Any], layout: TtlLayout, ttl: int, size: int) -> None:
        self._table = table
        self._layout = layout
        self._ttl = ttl
        self._size = size
        self.reset()

    def reset(self) -> None:
        self._keys: list[Any] = []
        self._position = 0
        self._floor = 0  # lower bound of the timestamps seen in the current round
        self._idle_until = -(2**63)  # runs before this time find nothing expired

    def run(self, now: int) -> None:
        if now < self._idle_until:
            return
        table = self._table
        keys = self._keys
        position = self._position
        if position >= len(keys):
            if not table:
                return
            keys = self._keys = list(table)
            position = 0
            self._floor = now  # values written during this round are stamped now or later
        end = min(position + self._size, len(keys))
        self._position = end
        layout = self._layout
        ttl = self._ttl
        floor = self._floor
        for key in keys[position:end]:
            stored = table.get(key, _MISSING)
            if stored is _MISSING:
                continue
            kept = layout.unexpired(stored, ttl, now)
            if kept is None:
                del table[key]
                continue
            if kept is not stored:
                table[key] = kept
            oldest = layout.oldest(kept)
            if oldest < floor:
                floor = oldest
        self._floor = floor
        if end == len(keys):
            self._idle_until = floor + ttl


# ---------------------------------------------------------------------------------------------------------------
# Handles. Each call reads the clock once and runs the incremental cleanup (if any) before touching the entry,
# as Flink's decorators do; reads follow Flink's getWithTtlCheckAndUpdate: missing -> nothing; expired ->
# removed, and returned only with ReturnExpiredIfNotCleanedUp; alive -> returned, timestamp renewed with
# OnReadAndWrite. Writes always stamp `now`.


class _TtlState:
    __slots__ = ("_backend", "_table", "_name", "_ttl", "_update_on_read", "_return_expired", "_cleanup")

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: dict[Any, Any],
        name: str,
        policy: TtlPolicy,
        cleanup: IncrementalCleanup | None,
    ) -> None:
        self._backend = backend
        self._table = table
        self._name = name
        self._ttl = policy.ttl
        self._update_on_read = policy.update_on_read
        self._return_expired = policy.return_expired
        self._cleanup = cleanup

    def _key(self) -> Any:
        key = self._backend.current_key
        if key is NO_KEY:
            raise no_key_error(self._name)
        return key

    def _now(self) -> int:
        """The access time of this call; runs the incremental cleanup first (Flink's access callback)."""
        now = self._backend.ttl_clock()
        if self._cleanup is not None:
            self._cleanup.run(now)
        return now

    def clear(self) -> None:
        self._table.pop(self._key(), None)

    def _read_scalar(self) -> Any:
        """The current key's user value after the TTL check, or _MISSING."""
        key = self._key()
        now = self._now()
        table = self._table
        stored = table.get(key)
        if stored is None:
            return _MISSING
        if stored.timestamp + self._ttl <= now:
            del table[key]
            return stored.value if self._return_expired else _MISSING
        if self._update_on_read:
            stored.timestamp = now
        return stored.value

    def _usable_for_merge(self, stored: TtlValue | None, now: int) -> TypeGuard[TtlValue]:
        """Flink's TtlReduceFunction/TtlAggregateFunction: an expired value is folded into the next add only when
        expired values are visible; otherwise the add starts afresh."""
        return stored is not None and (self._return_expired or stored.timestamp + self._ttl > now)


class TtlValueState(_TtlState, ValueState[Any]):
    __slots__ = ()

    # value() and update() inline _read_scalar and _now: they are the hottest TTL calls, and each Python call
    # layer costs about a quarter of a plain handle's whole access.

    def value(self) -> Any:
        key = self._key()
        now = self._backend.ttl_clock()
        if self._cleanup is not None:
            self._cleanup.run(now)
        table = self._table
        stored = table.get(key)
        if stored is None:
            return None
        if stored.timestamp + self._ttl <= now:
            del table[key]
            return stored.value if self._return_expired else None
        if self._update_on_read:
            stored.timestamp = now
        return stored.value

    def update(self, value: Any) -> None:
        key = self._key()
        now = self._backend.ttl_clock()
        if self._cleanup is not None:
            self._cleanup.run(now)
        if value is None:
            self._table.pop(key, None)
            return
        stored = self._table.get(key)
        if stored is None:
            self._table[key] = TtlValue(value, now)
        else:  # the live table owns its TtlValues (snapshots copy them), so renew in place
            stored.value = value
            stored.timestamp = now


class TtlReducingState(_TtlState, ReducingState[Any]):
    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: Any,
        table: dict[Any, Any],
        name: str,
        policy: TtlPolicy,
        cleanup: Any,
        reduce: Callable[[Any, Any], Any],
    ):
        _TtlState.__init__(self, backend, table, name, policy, cleanup)
        self._reduce = reduce

    def get(self) -> Any:
        value = self._read_scalar()
        return None if value is _MISSING else value

    def add(self, value: Any) -> None:
        key = self._key()
        now = self._now()
        stored = self._table.get(key)
        if self._usable_for_merge(stored, now):
            value = self._reduce(stored.value, value)
        self._table[key] = TtlValue(value, now)


class TtlAggregatingState(_TtlState, AggregatingState[Any, Any]):
    __slots__ = ("_agg",)

    def __init__(
        self, backend: Any, table: dict[Any, Any], name: str, policy: TtlPolicy, cleanup: Any, agg: Any
    ) -> None:
        _TtlState.__init__(self, backend, table, name, policy, cleanup)
        self._agg = agg

    def get(self) -> Any:
        accumulator = self._read_scalar()
        return None if accumulator is _MISSING else self._agg.get_result(accumulator)

    def add(self, value: Any) -> None:
        key = self._key()
        now = self._now()
        stored = self._table.get(key)
        accumulator = stored.value if self._usable_for_merge(stored, now) else self._agg.create_accumulator()
        self._table[key] = TtlValue(self._agg.add(value, accumulator), now)


class TtlListState(_TtlState, ListState[Any]):
    """Each element expires on its own. `get()` returns a new list of the visible elements."""

    __slots__ = ()

    def get(self) -> Iterable[Any]:
        key = self._key()
        now = self._now()
        table = self._table
        stored = table.get(key)
        if stored is None:
            return []
        ttl = self._ttl
        alive = [e for e in stored if e.timestamp + ttl > now]
        if len(alive) == len(stored):  # nothing expired: the common case
            if self._update_on_read:
                for element in stored:
                    element.timestamp = now
            return [e.value for e in stored]
        visible = [e.value for e in (stored if self._return_expired else alive)]
        if not alive:
            del table[key]  # Flink clears a list whose elements all expired
        elif self._update_on_read:
            for element in alive:
                element.timestamp = now
            table[key] = alive  # Flink rewrites the list with the unexpired elements, renewed
        elif not self._return_expired:
            table[key] = alive  # invisible from now on anyway: free them
        return visible

    def add(self, value: Any) -> None:
        key = self._key()
        now = self._now()
        values = self._table.get(key)
        if values is None:
            self._table[key] = [TtlValue(value, now)]
        else:
            values.append(TtlValue(value, now))

    def add_all(self, values: Iterable[Any]) -> None:
        key = self._key()
        now = self._now()
        new = [TtlValue(v, now) for v in values]
        if not new:
            return
        current = self._table.get(key)
        if current is None:
            self._table[key] = new
        else:
            current.extend(new)

    def update(self, values: Iterable[Any]) -> None:
        key = self._key()
        now = self._now()
        new = [TtlValue(v, now) for v in values]
        if new:
            self._table[key] = new
        else:
            self._table.pop(key, None)


class TtlMapState(_TtlState, MapState[Any, Any]):
    """Each entry expires on its own. items()/keys()/values() return new lists, not live views."""

    __slots__ = ()

    def _entry(self, user_key: Any) -> TtlValue | None:
        """The TtlValue of `user_key` after the TTL check (Flink's getWrapped), or None."""
        key = self._key()
        now = self._now()
        mapping = self._table.get(key)
        if mapping is None:
            return None
        stored: TtlValue | None = mapping.get(user_key)
        if stored is None:
            return None
        if stored.timestamp + self._ttl <= now:
            del mapping[user_key]
            if not mapping:
                del self._table[key]
            return stored if self._return_expired else None
        if self._update_on_read:
            stored.timestamp = now
        return stored

    def get(self, key: Any) -> Any:
        stored = self._entry(key)
        return None if stored is None else stored.value

    def contains(self, key: Any) -> bool:
        return self._entry(key) is not None

    def put(self, key: Any, value: Any) -> None:
        current = self._key()
        now = self._now()
        mapping = self._table.get(current)
        if mapping is None:
            self._table[current] = {key: TtlValue(value, now)}
        else:
            mapping[key] = TtlValue(value, now)

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        current = self._key()
        now = self._now()
        if not dict_value:
            return
        wrapped = {k: TtlValue(v, now) for k, v in dict_value.items()}
        mapping = self._table.get(current)
        if mapping is None:
            self._table[current] = wrapped
        else:
            mapping.update(wrapped)

    def remove(self, key: Any) -> None:
        current = self._key()
        self._now()
        mapping = self._table.get(current)
        if mapping is not None:
            mapping.pop(key, None)
            if not mapping:
                del self._table[current]

    def _visible_items(self, renew: bool) -> list[tuple[Any, Any]]:
        """Flink's entries iterator, run to the end: expired entries are removed (and listed only with
        ReturnExpiredIfNotCleanedUp), the others listed and, when `renew` and OnReadAndWrite, renewed."""
        key = self._key()
        now = self._now()
        mapping = self._table.get(key)
        if mapping is None:
            return []
        ttl = self._ttl
        renew = renew and self._update_on_read
        items = []
        expired = []
        for user_key, stored in mapping.items():
            if stored.timestamp + ttl <= now:
                expired.append(user_key)
                if self._return_expired:
                    items.append((user_key, stored.value))
            else:
                if renew:
                    stored.timestamp = now
                items.append((user_key, stored.value))
        if expired:
            for user_key in expired:
                del mapping[user_key]
            if not mapping:
                del self._table[key]
        return items

    def items(self) -> Iterable[tuple[Any, Any]]:
        return self._visible_items(renew=True)

    def keys(self) -> Iterable[Any]:
        return [k for k, _ in self._visible_items(renew=True)]

    def values(self) -> Iterable[Any]:
        return [v for _, v in self._visible_items(renew=True)]

    def is_empty(self) -> bool:
        return not self._visible_items(renew=False)  # reads no value, so renews no timestamp


def build_ttl_handle(
    backend: HeapKeyedStateBackend,
    descriptor: StateDescriptor,
    table: dict[Any, Any],
    policy: TtlPolicy,
    cleanup: IncrementalCleanup | None,
) -> State:
    """The TTL handle for `descriptor` over `table`, whose entries are already in the TTL layout."""
    name = descriptor.name
    kind = descriptor.kind
    if kind is StateKind.VALUE:
        return TtlValueState(backend, table, name, policy, cleanup)
    if kind is StateKind.LIST:
        return TtlListState(backend, table, name, policy, cleanup)
    if kind is StateKind.MAP:
        return TtlMapState(backend, table, name, policy, cleanup)
    if kind is StateKind.REDUCING:
        reduce = descriptor.get_reduce_function().reduce  # type: ignore[attr-defined]
        return TtlReducingState(backend, table, name, policy, cleanup, reduce)
    if kind is StateKind.AGGREGATING:
        agg = descriptor.get_agg_function()  # type: ignore[attr-defined]
        return TtlAggregatingState(backend, table, name, policy, cleanup, agg)
    raise StateError(
        f"state {name!r} of kind {kind!r} cannot have a TTL: use a Value-, List-, Map-, Reducing- or "
        "AggregatingStateDescriptor"
    )
