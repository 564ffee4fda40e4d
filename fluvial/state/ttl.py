"""State time-to-live: what a state with TTL stores, whatever the backend (Flink's TtlValue and TTL config).

Layout. A state with TTL keeps the heap layout (one dict per state name, `key -> stored`), with every user
value wrapped in a TtlValue that carries the timestamp of its last access:
- Value, Reducing and Aggregating state: `stored` is one TtlValue (the whole value expires at once);
- List state: a list of TtlValue (each element expires on its own, Flink's semantics);
- Map state: a dict `user key -> TtlValue` (each entry expires on its own).
Expiry (Flink's rule): a value has expired once `timestamp + ttl <= now`.

The heap backend's handles and cleanup over this layout are `fluvial.state.heap_ttl`; the RocksDB backend uses
the policy (to refuse TTL, which it does not support) and the layouts (to unwrap heap TTL state it restores).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import StateError
from fluvial.datastream.state import StateDescriptor, StateKind, StateTtlConfig


class TtlValue:
    """A user value and the processing time (ms) of its last access. Owned by one live table: the handles renew
    `timestamp` in place, so snapshots and restores copy TtlValues rather than share them."""

    __slots__ = ("value", "timestamp")

    def __init__(self, value: Any, timestamp: int) -> None:
        self.value = value
        self.timestamp = timestamp

    def __eq__(self, other: object) -> bool:
        return type(other) is TtlValue and other.value == self.value and other.timestamp == self.timestamp

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __reduce__(self) -> tuple[type[TtlValue], tuple[Any, int]]:
        return (TtlValue, (self.value, self.timestamp))

    def __repr__(self) -> str:
        return f"TtlValue({self.value!r}, {self.timestamp})"


@dataclass(frozen=True, slots=True)
class TtlPolicy:
    """A StateTtlConfig reduced to what the heap handles check on each call. Equal configs give equal policies."""

    ttl: int
    update_on_read: bool
    return_expired: bool
    cleanup_in_full_snapshot: bool
    incremental_cleanup_size: int  # 0: no incremental cleanup
    cleanup_for_every_record: bool

    @staticmethod
    def of(descriptor: StateDescriptor) -> TtlPolicy | None:
        """The policy of `descriptor`, or None when it has no TTL (none set, or update type Disabled)."""
        config = descriptor.ttl_config
        if config is None:
            return None
        if not isinstance(config, StateTtlConfig):
            raise StateError(
                f"state {descriptor.name!r} has {type(config).__name__} as its TTL config: pass a StateTtlConfig "
                "to enable_time_to_live, built with StateTtlConfig.new_builder(ttl)...build()"
            )
        if not config.is_enabled():
            return None
        strategies = config.get_cleanup_strategies()
        incremental = strategies.get_incremental_cleanup_strategy()
        return TtlPolicy(
            ttl=config.get_ttl().to_milliseconds(),
            update_on_read=config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite,
            return_expired=(
                config.get_state_visibility() is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            ),
            cleanup_in_full_snapshot=strategies.in_full_snapshot(),
            incremental_cleanup_size=0 if incremental is None else incremental.get_cleanup_size(),
            cleanup_for_every_record=incremental is not None and incremental.run_cleanup_for_every_record(),
        )


# ---------------------------------------------------------------------------------------------------------------
# Layouts: what "stored" is for each kind, and the whole-entry operations cleanup, snapshots and migration need.


class TtlLayout:
    """Operations on one stored entry of a TTL table. `to_wrapped`/`to_plain` are idempotent per element, so a
    table mixing both forms (a restore of old and new snapshots) converts safely."""

    def is_wrapped(self, stored: Any) -> bool | None:
        """Whether `stored` holds TtlValues; None when it cannot tell (an empty list or dict)."""
        raise NotImplementedError

    def to_wrapped(self, stored: Any, now: int) -> Any:
        """Enable TTL on an entry (Flink's migration: the value's clock starts now)."""
        raise NotImplementedError

    def to_plain(self, stored: Any) -> Any:
        """Disable TTL on an entry: drop the timestamps."""
        raise NotImplementedError

    def unexpired(self, stored: Any, ttl: int, now: int) -> Any:
        """`stored` without its expired values: the same object when nothing expired, None when all did."""
        raise NotImplementedError

    def private_copy(self, stored: Any, copy: Callable[[Any], Any]) -> Any:
        """A copy sharing nothing mutable with the live entry; `copy` copies one user value."""
        raise NotImplementedError

    def oldest(self, stored: Any) -> int:
        """The earliest timestamp in a (non-empty) entry: nothing in it expires before `oldest + ttl`."""
        raise NotImplementedError


class _ScalarLayout(TtlLayout):
    def is_wrapped(self, stored: Any) -> bool | None:
        return type(stored) is TtlValue

    def to_wrapped(self, stored: Any, now: int) -> Any:
        return stored if type(stored) is TtlValue else TtlValue(stored, now)

    def to_plain(self, stored: Any) -> Any:
        return stored.value if type(stored) is TtlValue else stored

    def unexpired(self, stored: Any, ttl: int, now: int) -> Any:
        return None if stored.timestamp + ttl <= now else stored

    def private_copy(self, stored: Any, copy: Callable[[Any], Any]) -> Any:
        return TtlValue(copy(stored.value), stored.timestamp)

    def oldest(self, stored: TtlValue) -> int:
        return stored.timestamp


class _ListLayout(TtlLayout):
    def is_wrapped(self, stored: Any) -> bool | None:
        return type(stored[0]) is TtlValue if stored else None

    def to_wrapped(self, stored: Any, now: int) -> Any:
        return [e if type(e) is TtlValue else TtlValue(e, now) for e in stored]

    def to_plain(self, stored: Any) -> Any:
        return [e.value if type(e) is TtlValue else e for e in stored]

    def unexpired(self, stored: Any, ttl: int, now: int) -> Any:
        alive = [e for e in stored if e.timestamp + ttl > now]
        if len(alive) == len(stored):
            return stored
        return alive or None

    def private_copy(self, stored: Any, copy: Callable[[Any], Any]) -> Any:
        return [TtlValue(copy(e.value), e.timestamp) for e in stored]

    def oldest(self, stored: list[TtlValue]) -> int:
        return min(e.timestamp for e in stored)


class _MapLayout(TtlLayout):
    def is_wrapped(self, stored: Any) -> bool | None:
        for value in stored.values():
            return type(value) is TtlValue
        return None

    def to_wrapped(self, stored: Any, now: int) -> Any:
        return {k: v if type(v) is TtlValue else TtlValue(v, now) for k, v in stored.items()}

    def to_plain(self, stored: Any) -> Any:
        return {k: v.value if type(v) is TtlValue else v for k, v in stored.items()}

    def unexpired(self, stored: Any, ttl: int, now: int) -> Any:
        alive = {k: v for k, v in stored.items() if v.timestamp + ttl > now}
        if len(alive) == len(stored):
            return stored
        return alive or None

    def private_copy(self, stored: Any, copy: Callable[[Any], Any]) -> Any:
        return {k: TtlValue(copy(v.value), v.timestamp) for k, v in stored.items()}

    def oldest(self, stored: dict[Any, TtlValue]) -> int:
        return min(v.timestamp for v in stored.values())


_SCALAR = _ScalarLayout()
_LAYOUTS: dict[StateKind, TtlLayout] = {
    StateKind.VALUE: _SCALAR,
    StateKind.REDUCING: _SCALAR,
    StateKind.AGGREGATING: _SCALAR,
    StateKind.LIST: _ListLayout(),
    StateKind.MAP: _MapLayout(),
}


def layout_for(kind: StateKind) -> TtlLayout:
    return _LAYOUTS[kind]
