"""Keyed state as user functions see it (PyFlink `pyflink.datastream.state`): handles and their descriptors.

A descriptor is inert, picklable data naming a piece of state and how to build it; it travels with the job.
When a task opens, its state backend turns each descriptor into a live handle bound to that subtask. Every
handle reads and writes the entry of the *current key* - the key of the record (or timer) being processed -
so a function applied to a KeyedStream sees one independent value, list or map per key.
"""

from __future__ import annotations

import abc
import enum
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

from fluvial.common.errors import InvalidJobError
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
    def add(self, value: T) -> None: ...

    @abc.abstractmethod
    def add_all(self, values: Iterable[T]) -> None: ...

    @abc.abstractmethod
    def update(self, values: Iterable[T]) -> None:
        """Replace the current key's list; an empty list clears it."""

    def __iter__(self) -> Iterator[T]:
        return iter(self.get())


class ReducingState(MergingState[T, T]):
    """One value per key, folded with a ReduceFunction on every `add`. `get()` is None when empty."""


class AggregatingState(MergingState[IN, OUT]):
    """One accumulator per key, folded with an AggregateFunction; `get()` is its result, None when empty."""


class MapState(State, Generic[K, V]):
    """A dictionary per key."""

    @abc.abstractmethod
    def get(self, key: K) -> V | None: ...

    @abc.abstractmethod
    def put(self, key: K, value: V) -> None: ...

    @abc.abstractmethod
    def put_all(self, dict_value: dict[K, V]) -> None: ...

    @abc.abstractmethod
    def remove(self, key: K) -> None:
        """Remove one mapping; removing an absent one is not an error."""

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

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


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

    def enable_time_to_live(self, ttl_config: Any) -> None:
        """Ask for entries to expire (a StateTtlConfig). Stored with the descriptor; backends apply it."""
        self.ttl_config = ttl_config

    def _fields(self) -> tuple:
        return tuple(getattr(self, slot) for cls in type(self).__mro__ for slot in getattr(cls, "__slots__", ()))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    __slots__ = ()
    kind = StateKind.VALUE

    def __init__(self, name: str, value_type_info: Any = None) -> None:
        StateDescriptor.__init__(self, name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    __slots__ = ()
    kind = StateKind.LIST

    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        StateDescriptor.__init__(self, name, elem_type_info)

    @property
    def elem_type_info(self) -> Any:
        return self.type_info


class MapStateDescriptor(StateDescriptor):
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
        return self.agg_function
