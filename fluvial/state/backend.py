"""What the runtime relies on from a keyed state backend, and the snapshot every backend produces.

A backend holds the keyed state of one subtask: the key groups in its `key_group_range`. The task thread is
its only user (DESIGN 4: one thread owns a task), so no method locks anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fluvial.common.errors import StateError
from fluvial.datastream.state import State, StateDescriptor, StateKind


class _NoKey:
    """The type of NO_KEY; one instance, so `key is NO_KEY` is the check."""

    __slots__ = ()
    _instance: _NoKey | None = None

    def __new__(cls) -> _NoKey:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_KEY"

    def __reduce__(self) -> str:
        return "NO_KEY"


NO_KEY: Any = _NoKey()
"""`current_key` outside a keyed context. Distinct from None, which is a legal key."""


@dataclass(frozen=True, slots=True)
class KeyedStateSnapshot:
    """The keyed state of one subtask at one checkpoint, split by key group so it can be redistributed.

    - `key_groups`: key group -> state name -> key -> value. Only key groups holding at least one entry appear,
      and a state name appears under a key group only when it has entries there.
    - `state_kinds`: state name -> StateKind value ("value", "list", ...) for every registered state, empty
      or not, so a restore can reject a name reused with another kind.
    The values are private copies: later changes to the live backend never show through.
    """

    max_parallelism: int
    key_groups: dict[int, dict[str, dict[Any, Any]]]
    state_kinds: dict[str, str]

    def select(self, key_group_range: range) -> KeyedStateSnapshot:
        """The part of this snapshot a subtask owning `key_group_range` needs (used when rescaling)."""
        groups = {kg: states for kg, states in self.key_groups.items() if kg in key_group_range}
        return KeyedStateSnapshot(self.max_parallelism, groups, dict(self.state_kinds))

    def is_empty(self) -> bool:
        return not self.key_groups


class StateReader(Protocol):
    """Reads the bytes behind a state handle, verified (the checkpoint storage provides it)."""

    def __call__(self, handle: Any) -> bytes: ...


@runtime_checkable
class KeyedStateBackend(Protocol):
    """The runtime's contract with a keyed state backend (heap today, RocksDB later).

    Per record the runtime does exactly one thing: it assigns `current_key` (a plain attribute, so the hot path
    is one store). Everything else happens at open, at a checkpoint, or at restore:

    1. open: `get_state(descriptor)` for each descriptor a function asks for; handles stay valid until
       `dispose()` and read `current_key` themselves on every call.
    2. per record: `backend.current_key = key`; then user code calls its handles. Outside a keyed context
       `current_key` is NO_KEY and every handle raises StateError.
    3. checkpoint: `snapshot(checkpoint_id, snapshot_type)` is the synchronous part and returns a pending
       snapshot whose `write(writer)` is the asynchronous part (see `fluvial.state.snapshot`); when the
       checkpoint completes or is aborted, `notify_checkpoint_complete` / `notify_checkpoint_aborted`.
    4. restore: `restore(handles, reader)` before the first record, with the handles of any number of old
       subtasks; the backend keeps the key groups in its own `key_group_range` (this is how rescaling works).
       `snapshot_key_groups()` / `restore_key_groups(snapshots)` are the same in memory, in canonical form.
    """

    max_parallelism: int
    key_group_range: range
    current_key: Any

    def set_current_key(self, key: Any) -> None: ...

    def get_current_key(self) -> Any: ...

    def get_state(self, descriptor: StateDescriptor) -> State:
        """The handle for `descriptor`: the same handle for the same name; StateError for a name reused with
        another kind."""
        ...

    def value_table(self, name: str) -> MutableMapping[Any, Any]:
        """Raw key -> value access for internal operators (e.g. a keyed running reduce), bypassing handles.

        Contract: read with `table.get(key)`, write with `table[key] = value`, delete with `del table[key]`.
        Always write a changed value back; never rely on mutating a value in place (a serializing backend
        would not see it). The mapping stays valid until `dispose()`.
        """
        ...

    def keys(self, state_name: str) -> Iterator[Any]:
        """The keys that have an entry in `state_name` (none for an unknown name)."""
        ...

    def apply_to_all_keys(self, descriptor: StateDescriptor, function: Callable[[Any, State], None]) -> None:
        """Call `function(key, state)` for every key with an entry, with `current_key` set to that key."""
        ...

    def snapshot(self, checkpoint_id: int, snapshot_type: Any) -> Any:
        """The synchronous part of a checkpoint: a PendingKeyedSnapshot (fluvial.state.snapshot)."""
        ...

    def restore(
        self, handles: Sequence[Any], reader: StateReader, checkpoint_id: int | None = None, owned: bool = False
    ) -> None:
        """Restore from KeyedStateHandles. `owned`: the handles belong to this job's own checkpoint (a
        failover), so an incremental backend may build its next checkpoint on their files; a checkpoint or
        savepoint of another run is never owned (Flink's NO_CLAIM restore)."""
        ...

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None: ...

    def snapshot_key_groups(self) -> KeyedStateSnapshot: ...

    def restore_key_groups(self, snapshots: list[KeyedStateSnapshot]) -> None: ...

    def dispose(self) -> None: ...


def no_key_error(state_name: str) -> StateError:
    """The error every backend raises when keyed state is used while no record's key is set."""
    return StateError(
        f"keyed state {state_name!r} used outside a keyed context: use it in a function applied to a "
        "KeyedStream (after key_by)"
    )


def build_state_handle(
    descriptor: Any, handle_classes: Mapping[StateKind, Callable[..., State]], *common: Any
) -> State:
    """The handle a backend gives for `descriptor`: `handle_classes[kind](*common, name, *function)`, where a
    reducing state's class also receives the reduce function and an aggregating state's the AggregateFunction."""
    kind = getattr(descriptor, "kind", None)
    handle_class = handle_classes.get(kind) if isinstance(kind, StateKind) else None
    if handle_class is None:
        raise StateError(
            f"state {descriptor.name!r} has an unknown descriptor type {type(descriptor).__name__}: use a Value-, "
            "List-, Map-, Reducing- or AggregatingStateDescriptor"
        )
    if kind is StateKind.REDUCING:
        return handle_class(*common, descriptor.name, descriptor.get_reduce_function().reduce)
    if kind is StateKind.AGGREGATING:
        return handle_class(*common, descriptor.name, descriptor.get_agg_function())
    return handle_class(*common, descriptor.name)


def check_key_groups(max_parallelism: int, key_group_range: range) -> None:
    """What every keyed backend checks at construction: a max parallelism Flink allows, and a contiguous key
    group range inside it."""
    from fluvial.common.key_groups import UPPER_BOUND_MAX_PARALLELISM

    if not 1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        raise StateError(
            f"max parallelism {max_parallelism} is outside 1..{UPPER_BOUND_MAX_PARALLELISM}: use a value in that range"
        )
    if key_group_range.step != 1 or key_group_range.start < 0 or key_group_range.stop > max_parallelism:
        raise StateError(
            f"key group range {key_group_range} does not fit in range(0, {max_parallelism}): compute it with "
            "key_group_range_for_operator(max_parallelism, parallelism, index)"
        )
