"""Keyed state as user functions see it (PyFlink `pyflink.datastream.state`): handles and their descriptors.

A descriptor is inert, picklable data naming a piece of state and how to build it; it travels with the job.
When a task opens, its state backend turns each descriptor into a live handle bound to that subtask. Every
handle reads and writes the entry of the *current key* - the key of the record (or timer) being processed -
so a function applied to a KeyedStream sees one independent value, list or map per key.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fluvial.common.errors import InvalidJobError
from fluvial.common.lazy_names import lazy_names
from fluvial.common.time import Duration, to_millis
from fluvial.datastream.functions import AggregateFunction, ReduceFunction

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")


class StateKind(str, enum.Enum):
    """The kind of handle a descriptor asks for; one state name holds exactly one kind."""

    VALUE = "value"
    LIST = "list"
    MAP = "map"
    REDUCING = "reducing"
    AGGREGATING = "aggregating"


# ---------------------------------------------------------------------------------------------------------------
# Handles. Backends implement them; user code only calls them.


class State(abc.ABC):
    """Base of every state handle."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove the current key's entry: afterwards the state reads as empty for that key."""


class ValueState(State, Generic[T]):
    """One value per key."""

    @abc.abstractmethod
    def value(self) -> T | None:
        """The current key's value, or None when it has none."""

    @abc.abstractmethod
    def update(self, value: T | None) -> None:
        """Replace the current key's value; `update(None)` is `clear()` (as in Flink)."""


class AppendingState(State, Generic[IN, OUT]):
    """State that values are added to and read back as one result."""

    @abc.abstractmethod
    def get(self) -> OUT: ...

    @abc.abstractmethod
    def add(self, value: IN) -> None: ...


class MergingState(AppendingState[IN, OUT]):
    """Appending state whose entries can be merged (session windows)."""


class ListState(MergingState[T, Iterable[T]]):
    """A list of values per key."""

    @abc.abstractmethod
    def get(self) -> Iterable[T]:
        """The current key's values (empty when it has none). Read it, do not keep or mutate it."""

    @abc.abstractmethod
    def add(self, value: T) -> None:
        """Append a value to the current key's list.

        Args:
            value: The value.
        """

    @abc.abstractmethod
    def add_all(self, values: Iterable[T]) -> None:
        """Append every value to the current key's list.

        Args:
            values: The values, in order.
        """

    @abc.abstractmethod
    def update(self, values: Iterable[T]) -> None:
        """Replace the current key's list; an empty list clears it."""

    def __iter__(self) -> Iterator[T]:
        return iter(self.get())


class ReducingState(MergingState[T, T]):
    """One value per key, folded with a ReduceFunction on every `add`. `get()` is None when empty."""


class AggregatingState(MergingState[IN, OUT]):
    """One accumulator per key, folded with an AggregateFunction; `get()` is its result, None when empty."""


class ReadableMapState(State, Generic[K, V]):
    """The read side of a map of state: MapState's, and the broadcast states' (`subtask_state`)."""

    @abc.abstractmethod
    def get(self, key: K) -> V | None: ...

    @abc.abstractmethod
    def contains(self, key: K) -> bool: ...

    @abc.abstractmethod
    def items(self) -> Iterable[tuple[K, V]]: ...

    @abc.abstractmethod
    def keys(self) -> Iterable[K]: ...

    @abc.abstractmethod
    def values(self) -> Iterable[V]: ...

    @abc.abstractmethod
    def is_empty(self) -> bool: ...

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class MapState(ReadableMapState[K, V]):
    """A dictionary per key."""

    @abc.abstractmethod
    def put(self, key: K, value: V) -> None:
        """Map `key` to `value` in the current key's map.

        Args:
            key: The map key.
            value: The value.
        """

    @abc.abstractmethod
    def put_all(self, dict_value: dict[K, V]) -> None:
        """Put every entry of `dict_value` into the current key's map.

        Args:
            dict_value: The entries.
        """

    @abc.abstractmethod
    def remove(self, key: K) -> None:
        """Remove one mapping; removing an absent one is not an error."""

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


# ---------------------------------------------------------------------------------------------------------------
# Descriptors: plain data, compared by value, picklable (cloudpickle for lambdas inside).


class StateDescriptor(abc.ABC):
    """Names a piece of keyed state. `type_info` is advisory: fluvial keeps Python objects as they are."""

    __slots__ = ("name", "type_info", "ttl_config")
    kind: StateKind

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidJobError(
                f"a {type(self).__name__} needs a non-empty string name, got {name!r}: "
                "pass a name that is unique within the function, e.g. 'count'"
            )
        self.name = name
        self.type_info = type_info
        self.ttl_config: Any = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Ask for entries to expire. Stored with the descriptor; the backend applies it when it builds the handle.

        A config whose update type is Disabled (`is_enabled()` false) leaves the state without TTL, as in Flink.
        """
        if not isinstance(ttl_config, StateTtlConfig):
            raise InvalidJobError(
                f"state {self.name!r}: enable_time_to_live needs a StateTtlConfig, got {type(ttl_config).__name__}: "
                "pass StateTtlConfig.new_builder(Duration.of_hours(1)).build()"
            )
        self.ttl_config = ttl_config

    def get_ttl_config(self) -> StateTtlConfig | None:
        return self.ttl_config

    def _fields(self) -> tuple:
        return tuple(getattr(self, slot) for cls in type(self).__mro__ for slot in getattr(cls, "__slots__", ()))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    """Declares a ValueState: one value per key (PyFlink's `ValueStateDescriptor`).

    Args:
        name: The state's name, unique in its operator; a savepoint finds the state by it.
        value_type_info: The value's type.

    Example:
        ```python
        runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        ```
    """

    __slots__ = ()
    kind = StateKind.VALUE

    def __init__(self, name: str, value_type_info: Any = None) -> None:
        StateDescriptor.__init__(self, name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    """Declares a ListState: a list of values per key (PyFlink's `ListStateDescriptor`).

    Args:
        name: The state's name, unique in its operator.
        elem_type_info: The elements' type.
    """

    __slots__ = ()
    kind = StateKind.LIST

    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        StateDescriptor.__init__(self, name, elem_type_info)

    @property
    def elem_type_info(self) -> Any:
        """The elements' type."""
        return self.type_info


class MapStateDescriptor(StateDescriptor):
    """Declares a MapState: a dictionary per key (PyFlink's `MapStateDescriptor`); also the descriptor of
    broadcast state.

    Args:
        name: The state's name, unique in its operator.
        key_type_info: The map keys' type.
        value_type_info: The map values' type.
    """

    __slots__ = ("key_type_info", "value_type_info")
    kind = StateKind.MAP

    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        StateDescriptor.__init__(self, name, None)
        self.key_type_info = key_type_info
        self.value_type_info = value_type_info


class _CallableReduceFunction(ReduceFunction):
    """Adapts a plain `(a, b) -> c` callable; module-level so the descriptor stays picklable."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def reduce(self, value1: Any, value2: Any) -> Any:
        return self.fn(value1, value2)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _CallableReduceFunction) and other.fn == self.fn

    def __hash__(self) -> int:
        return hash(self.fn)


class ReducingStateDescriptor(StateDescriptor):
    """`reduce_function` is a ReduceFunction or any two-argument callable."""

    __slots__ = ("reduce_function",)
    kind = StateKind.REDUCING

    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        StateDescriptor.__init__(self, name, type_info)
        if not isinstance(reduce_function, ReduceFunction):
            if not callable(reduce_function):
                raise InvalidJobError(
                    f"ReducingStateDescriptor {name!r} got {type(reduce_function).__name__} as reduce_function: "
                    "pass a ReduceFunction or a callable (a, b) -> c"
                )
            reduce_function = _CallableReduceFunction(reduce_function)
        self.reduce_function: ReduceFunction = reduce_function

    def get_reduce_function(self) -> ReduceFunction:
        """The ReduceFunction that combines added values into the state."""
        return self.reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    """`agg_function` is an AggregateFunction (or any object with its create_accumulator/add/get_result)."""

    __slots__ = ("agg_function",)
    kind = StateKind.AGGREGATING

    def __init__(self, name: str, agg_function: AggregateFunction, state_type_info: Any = None) -> None:
        StateDescriptor.__init__(self, name, state_type_info)
        missing = [m for m in ("create_accumulator", "add", "get_result") if not hasattr(agg_function, m)]
        if missing:
            raise InvalidJobError(
                f"AggregatingStateDescriptor {name!r} got {type(agg_function).__name__} as agg_function, which "
                f"lacks {', '.join(missing)}: pass an AggregateFunction"
            )
        self.agg_function = agg_function

    def get_agg_function(self) -> AggregateFunction:
        """The AggregateFunction that folds added values into the state."""
        return self.agg_function


# ---------------------------------------------------------------------------------------------------------------
# State time-to-live (PyFlink `StateTtlConfig`). Plain, picklable, compared by value; the backend applies it.


def _positive_ttl(ttl: Any) -> Duration:
    """The TTL as a Duration of at least 1 ms; InvalidJobError for anything else (checked when it is set)."""
    try:
        millis = to_millis(ttl)
    except TypeError:
        raise InvalidJobError(
            f"state TTL must be a Duration, got {type(ttl).__name__} {ttl!r}: pass e.g. Duration.of_hours(1) or "
            "Time.minutes(10)"
        ) from None
    if millis <= 0:
        raise InvalidJobError(
            f"state TTL must be positive, got {millis} ms: pass a Duration of at least 1 ms, e.g. Duration.of_hours(1)"
        )
    return ttl if isinstance(ttl, Duration) else Duration.of_millis(millis)


_DEFAULT_PERIODIC_COMPACTION = Duration.of_days(30)


def _periodic_compaction(value: Any) -> Duration:
    """PyFlink's rule: any falsy argument (None, 0, False, '') means the 30-day default; a Duration is kept as
    given (Duration.of_millis(0) turns periodic compaction off); anything else is an error."""
    if isinstance(value, Duration):
        return value
    if not value:
        return _DEFAULT_PERIODIC_COMPACTION
    raise InvalidJobError(
        f"cleanup_in_rocksdb_compact_filter needs a Duration as periodic_compaction_time, got {value!r}: pass e.g. "
        "Duration.of_days(30), or Duration.of_millis(0) for none"
    )


def _expect(value: Any, kind: type, setter: str) -> Any:
    if not isinstance(value, kind):
        members = ", ".join(f"{kind.__qualname__}.{member.name}" for member in kind)  # type: ignore[attr-defined]
        raise InvalidJobError(f"{setter} needs a {kind.__qualname__}, got {value!r}: pass one of {members}")
    return value


class StateTtlConfig:
    """How long keyed state lives after its last access, and when expired entries are removed.

    Built with `StateTtlConfig.new_builder(ttl)...build()` and handed to `descriptor.enable_time_to_live`.
    Semantics (Flink's, processing time only): every stored value (each list element, each map entry) keeps the
    timestamp of its last write - or of its last read too with OnReadAndWrite - and is expired once
    `timestamp + ttl <= now`. Expired values are removed when read (NeverReturnExpired hides them;
    ReturnExpiredIfNotCleanedUp hands them out that one last time), by the incremental cleanup that runs on
    state access (on by default: 5 entries per access), and from full snapshots with `cleanup_full_snapshot()`.
    """

    class UpdateType(enum.Enum):
        """When the last-access timestamp is renewed, extending a value's life."""

        Disabled = 0  # no TTL at all: the state is built without it
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(enum.Enum):
        """Whether a read may return a value that has expired but is still stored."""

        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(enum.Enum):
        """The time scale of TTL; Flink supports processing time only."""

        ProcessingTime = 0

    @dataclass(frozen=True, slots=True)
    class IncrementalCleanupStrategy:
        """Check `cleanup_size` entries of the state for expiry on every access (and per record if asked)."""

        cleanup_size: int
        for_every_record: bool = False

        def get_cleanup_size(self) -> int:
            return self.cleanup_size

        def run_cleanup_for_every_record(self) -> bool:
            return self.for_every_record

    @dataclass(frozen=True, slots=True)
    class RocksdbCompactFilterCleanupStrategy:
        """Drop expired entries during RocksDB compaction (stored here; applied by the RocksDB backend)."""

        query_time_after_num_entries: int
        periodic_compaction_time: Duration = _DEFAULT_PERIODIC_COMPACTION

        def __post_init__(self) -> None:
            object.__setattr__(self, "periodic_compaction_time", _periodic_compaction(self.periodic_compaction_time))

        def get_query_time_after_num_entries(self) -> int:
            return self.query_time_after_num_entries

        def get_periodic_compaction_time(self) -> Duration:
            return self.periodic_compaction_time

    @dataclass(frozen=True, slots=True)
    class CleanupStrategies:
        """The cleanup strategies of one config. Background cleanup (default on) supplies Flink's defaults: an
        incremental cleanup of 5 entries per access on the heap backend, a compaction filter on RocksDB."""

        full_snapshot: bool = False
        incremental: StateTtlConfig.IncrementalCleanupStrategy | None = None
        rocksdb_compact_filter: StateTtlConfig.RocksdbCompactFilterCleanupStrategy | None = None
        cleanup_in_background: bool = True

        def is_cleanup_in_background(self) -> bool:
            return self.cleanup_in_background

        def in_full_snapshot(self) -> bool:
            return self.full_snapshot

        def get_incremental_cleanup_strategy(self) -> StateTtlConfig.IncrementalCleanupStrategy | None:
            if self.incremental is not None or not self.cleanup_in_background:
                return self.incremental
            return StateTtlConfig.IncrementalCleanupStrategy(5, False)

        def get_rocksdb_compact_filter_cleanup_strategy(
            self,
        ) -> StateTtlConfig.RocksdbCompactFilterCleanupStrategy | None:
            if self.rocksdb_compact_filter is not None or not self.cleanup_in_background:
                return self.rocksdb_compact_filter
            return StateTtlConfig.RocksdbCompactFilterCleanupStrategy(1000)

    class Builder:
        """Mutable; every setter returns the builder. Values are checked as they are set."""

        __slots__ = (
            "_ttl",
            "_update_type",
            "_visibility",
            "_characteristic",
            "_full_snapshot",
            "_incremental",
            "_compact_filter",
            "_in_background",
        )

        def __init__(self, ttl: Duration) -> None:
            self._ttl = _positive_ttl(ttl)
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._full_snapshot = False
            self._incremental: StateTtlConfig.IncrementalCleanupStrategy | None = None
            self._compact_filter: StateTtlConfig.RocksdbCompactFilterCleanupStrategy | None = None
            self._in_background = True

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update_type = _expect(update_type, StateTtlConfig.UpdateType, "set_update_type")
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self, visibility: StateTtlConfig.StateVisibility) -> StateTtlConfig.Builder:
            self._visibility = _expect(visibility, StateTtlConfig.StateVisibility, "set_state_visibility")
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, characteristic: StateTtlConfig.TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            self._characteristic = _expect(
                characteristic, StateTtlConfig.TtlTimeCharacteristic, "set_ttl_time_characteristic"
            )
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)

        def set_ttl(self, ttl: Duration) -> StateTtlConfig.Builder:
            self._ttl = _positive_ttl(ttl)
            return self

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            """Leave expired entries out of full snapshots (every heap snapshot is full); live state keeps them."""
            self._full_snapshot = True
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool = False
        ) -> StateTtlConfig.Builder:
            """On every access to the state, check `cleanup_size` of its entries (a cursor that walks all keys
            round-robin) and drop the expired ones; with `run_cleanup_for_every_record`, also once per record
            processed. Costs latency on every access; entries of a state nobody touches stay until then."""
            if isinstance(cleanup_size, bool) or not isinstance(cleanup_size, int) or cleanup_size <= 0:
                raise InvalidJobError(
                    f"cleanup_incrementally needs a positive number of entries to check per access, got "
                    f"{cleanup_size!r}: pass e.g. cleanup_incrementally(10, False)"
                )
            self._incremental = StateTtlConfig.IncrementalCleanupStrategy(
                cleanup_size, bool(run_cleanup_for_every_record)
            )
            return self

        def cleanup_in_rocksdb_compact_filter(
            self, query_time_after_num_entries: int, periodic_compaction_time: Duration | None = None
        ) -> StateTtlConfig.Builder:
            """Stored for the RocksDB backend; the heap backend ignores it."""
            if (
                isinstance(query_time_after_num_entries, bool)
                or not isinstance(query_time_after_num_entries, int)
                or query_time_after_num_entries < 0
            ):
                raise InvalidJobError(
                    f"cleanup_in_rocksdb_compact_filter needs a number of entries >= 0, got "
                    f"{query_time_after_num_entries!r}: pass e.g. cleanup_in_rocksdb_compact_filter(1000)"
                )
            self._compact_filter = StateTtlConfig.RocksdbCompactFilterCleanupStrategy(
                query_time_after_num_entries, _periodic_compaction(periodic_compaction_time)
            )
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            """Turn off the default background cleanup; explicitly configured strategies stay on."""
            self._in_background = False
            return self

        def build(self) -> StateTtlConfig:
            strategies = StateTtlConfig.CleanupStrategies(
                self._full_snapshot, self._incremental, self._compact_filter, self._in_background
            )
            return StateTtlConfig(self._update_type, self._visibility, self._characteristic, self._ttl, strategies)

    __slots__ = ("_update_type", "_state_visibility", "_ttl_time_characteristic", "_ttl", "_cleanup_strategies")

    def __init__(
        self,
        update_type: StateTtlConfig.UpdateType,
        state_visibility: StateTtlConfig.StateVisibility,
        ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic,
        ttl: Duration,
        cleanup_strategies: StateTtlConfig.CleanupStrategies,
    ) -> None:
        self._update_type = _expect(update_type, StateTtlConfig.UpdateType, "StateTtlConfig")
        self._state_visibility = _expect(state_visibility, StateTtlConfig.StateVisibility, "StateTtlConfig")
        self._ttl_time_characteristic = _expect(
            ttl_time_characteristic, StateTtlConfig.TtlTimeCharacteristic, "StateTtlConfig"
        )
        self._ttl = _positive_ttl(ttl)
        self._cleanup_strategies = cleanup_strategies

    @staticmethod
    def new_builder(ttl: Duration) -> StateTtlConfig.Builder:
        """A builder of a time-to-live for state values.

        Args:
            ttl: How long a value lives after its last update (or read, by `set_update_type`).

        Returns:
            The builder.

        Example:
            ```python
            ttl = StateTtlConfig.new_builder(Duration.of_hours(1)).cleanup_full_snapshot().build()
            descriptor.enable_time_to_live(ttl)
            ```
        """
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        """When the time to live restarts: on create and write (the default), or also on read."""
        return self._update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        """Whether an expired value not yet cleaned up is returned (never, by default)."""
        return self._state_visibility

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        """The clock the time to live runs on: processing time."""
        return self._ttl_time_characteristic

    def get_ttl(self) -> Duration:
        """The time to live."""
        return self._ttl

    def is_enabled(self) -> bool:
        """Whether values expire (the update type is not DISABLED)."""
        return self._update_type is not StateTtlConfig.UpdateType.Disabled

    def get_cleanup_strategies(self) -> StateTtlConfig.CleanupStrategies:
        """How expired values are removed: on full snapshots, incrementally, or in RocksDB compaction."""
        return self._cleanup_strategies

    def _fields(self) -> tuple:
        return (
            self._update_type,
            self._state_visibility,
            self._ttl_time_characteristic,
            self._ttl,
            self._cleanup_strategies,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateTtlConfig) and other._fields() == self._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple:
        return (StateTtlConfig, self._fields())

    def _to_proto(self) -> dict[str, Any]:
        """The config as PyFlink's StateTTLConfig message, as a plain dict with the message's field names
        (fluvial sends no protobuf to a Java runtime); `_from_proto` reads it back."""
        strategies = self._cleanup_strategies
        message: dict[str, Any] = {
            "update_type": self._update_type.name,
            "state_visibility": self._state_visibility.name,
            "ttl_time_characteristic": self._ttl_time_characteristic.name,
            "ttl": self._ttl.millis,
            "cleanup_strategies": {
                "is_cleanup_in_background": strategies.cleanup_in_background,
                "full_snapshot": strategies.full_snapshot,
            },
        }
        if strategies.incremental is not None:
            message["cleanup_strategies"]["incremental_cleanup_strategy"] = {
                "cleanup_size": strategies.incremental.cleanup_size,
                "run_cleanup_for_every_record": strategies.incremental.for_every_record,
            }
        if strategies.rocksdb_compact_filter is not None:
            compact = strategies.rocksdb_compact_filter
            message["cleanup_strategies"]["rocksdb_compact_filter_cleanup_strategy"] = {
                "query_time_after_num_entries": compact.query_time_after_num_entries,
                "periodic_compaction_time": compact.periodic_compaction_time.millis,
            }
        return message

    @staticmethod
    def _from_proto(message: dict[str, Any]) -> StateTtlConfig:
        cleanup = message["cleanup_strategies"]
        incremental = cleanup.get("incremental_cleanup_strategy")
        compact = cleanup.get("rocksdb_compact_filter_cleanup_strategy")
        strategies = StateTtlConfig.CleanupStrategies(
            cleanup["full_snapshot"],
            None
            if incremental is None
            else StateTtlConfig.IncrementalCleanupStrategy(
                incremental["cleanup_size"], incremental["run_cleanup_for_every_record"]
            ),
            None
            if compact is None
            else StateTtlConfig.RocksdbCompactFilterCleanupStrategy(
                compact["query_time_after_num_entries"], Duration.of_millis(compact["periodic_compaction_time"])
            ),
            cleanup["is_cleanup_in_background"],
        )
        return StateTtlConfig(
            StateTtlConfig.UpdateType[message["update_type"]],
            StateTtlConfig.StateVisibility[message["state_visibility"]],
            StateTtlConfig.TtlTimeCharacteristic[message["ttl_time_characteristic"]],
            Duration.of_millis(message["ttl"]),
            strategies,
        )

    def __repr__(self) -> str:
        return (
            f"StateTtlConfig(ttl={self._ttl.millis} ms, update_type={self._update_type.name}, "
            f"state_visibility={self._state_visibility.name}, cleanup={self._cleanup_strategies})"
        )


# PyFlink nests the strategy classes in CleanupStrategies; both paths name the same classes.
StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy = StateTtlConfig.IncrementalCleanupStrategy  # type: ignore[attr-defined]
StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy = (  # type: ignore[attr-defined]
    StateTtlConfig.RocksdbCompactFilterCleanupStrategy
)


# PyFlink keeps the broadcast and operator state interfaces in this module too; they live in `subtask_state`
# (state of a parallel subtask, not of a key), which imports this module.
__getattr__ = lazy_names(
    __name__,
    {
        name: "fluvial.datastream.subtask_state"
        for name in ("ReadOnlyBroadcastState", "BroadcastState", "OperatorStateStore")
    },
    globals(),
)
