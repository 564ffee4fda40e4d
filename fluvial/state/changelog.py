"""The changelog state backend (Flink's ChangelogKeyedStateBackend, FLIP-158): a keyed backend that logs every
state change, so a checkpoint uploads little whatever the size of the state.

It wraps the job's keyed backend (heap or RocksDB), which keeps holding the state and answering reads. Every write
through a handle (or an internal operator's value table) is applied to the wrapped backend and appended to an
in-memory log as one change (see `fluvial.state.changelog_handles`). Then:

1. checkpoint (synchronous part, task thread): the log written since the previous checkpoint is cut into a
   segment (pickled now, so later writes cannot reach it); the checkpoint is the last materialization plus every
   segment after it. Asynchronous part: the segments not stored yet are stored (inline, or a file under
   `state.changelog.dstl.dfs.base-path`) — usually only the new one.
2. materialization: when `state.changelog.periodic-materialize.interval` has passed (checked at each checkpoint,
   after the first), the wrapped backend's own snapshot is taken on the task thread and stored on the
   materialization thread, in the checkpoint storage's shared area. The first checkpoint after it has finished
   refers to it instead of the segments before it; those are dropped from the backend and their files removed by
   the checkpoint store once no retained checkpoint needs them. A failed materialization is retried at the next
   interval; more than `state.changelog.max-failures-allowed` failures in a row fail the task.
3. restore: the materialization is restored into the wrapped backend (rescaling by key groups as it always
   does), then the segments are replayed, keeping this subtask's key groups. A failover at the same parallelism
   carries on from the restored checkpoint; any other restore (rescaling, a checkpoint of another run, a
   savepoint) stores a full materialization with the next checkpoint, since the backend no longer matches a
   materialization plus log it owns.
4. savepoint: the wrapped backend's canonical snapshot, as in Flink (a savepoint outlives the log).

Timers and operator state are not in the log: the runtime checkpoints them beside the keyed state as before.
Not logged either: reads. A TTL state whose config refreshes its timestamp on read (OnReadAndWrite) keeps, after a
restore, the timestamp of its last write.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from fluvial.common.errors import StateError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.state import (
    State,
    StateDescriptor,
    StateKind,
)
from fluvial.datastream.state_backend import ChangelogSettings
from fluvial.state.backend import KeyedStateSnapshot, StateReader
from fluvial.state.changelog_handles import (
    ChangelogStateBackendHandle,
    Materialization,
    MaterializedStateHandle,
    PendingSegment,
    StateChangelogStorage,
    restore_with_changelog,
)
from fluvial.state.changelog_state import LOGGED, LOGGED_WITH_TTL, LoggedState, LoggedTable
from fluvial.state.snapshot import SnapshotType

logger = logging.getLogger(__name__)

MATERIALIZATION_ID_BASE = 1 << 40
"""Materializations are snapshots of the wrapped backend under ids of their own, far above any checkpoint id, so
a RocksDB backend's native checkpoints of the two never share a name."""

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _materialization_executor() -> ThreadPoolExecutor:
    """One thread per process stores materializations (Flink's materialization thread), off the task and
    checkpoint I/O threads, so a large upload never delays a checkpoint."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="changelog-materialization")
        return _executor


class ChangelogKeyedStateBackend:
    """A KeyedStateBackend that logs the changes made to the one it wraps. See the module docstring.

    `current_key` is a property forwarding to the wrapped backend (its handles read the key there), so per record
    the runtime's one assignment costs one property call more than without the changelog."""

    def __init__(
        self,
        inner: Any,
        settings: ChangelogSettings,
        task_info: TaskInfo,
        operator_id: str,
        storage: StateChangelogStorage,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        self._settings = settings
        self._storage = storage
        self._clock = clock
        self._owner = f"{operator_id or 'operator'}-{task_info.subtask_index}-{task_info.attempt_number}"
        self._what = f"the changelog state backend of {task_info.task_name_with_subtasks} ({operator_id})"
        self.max_parallelism: int = inner.max_parallelism
        self.key_group_range: range = inner.key_group_range
        self._log: list[Any] = []  # flat: four slots (op, state name, key, argument) per change
        self._kinds: dict[str, str] = {}
        self._handles: dict[str, LoggedState] = {}
        self._tables: dict[str, LoggedTable] = {}
        self._segments: list[PendingSegment] = []
        self._next_segment = 0
        self._materialized: MaterializedStateHandle | None = None
        self._materialization_ids = itertools.count(MATERIALIZATION_ID_BASE)
        self._in_flight: tuple[Materialization, Future[int]] | None = None
        self._forced: Materialization | None = None  # a full materialization the next checkpoints store
        self._forced_reason: str | None = None  # why the backend needs one (set by a restore it cannot build on)
        self._last_materialization = clock()
        self._failures = 0
        self._writer: Any = None  # the checkpoint's StateWriter: where materializations store their files
        self._disposed = False
        self.last_checkpoint_upload = 0  # bytes the last checkpoint's asynchronous part stored (for figures)

    # -- the keyed context ----------------------------------------------------------------------------------------

    @property
    def current_key(self) -> Any:
        return self._inner.current_key

    @current_key.setter
    def current_key(self, key: Any) -> None:
        self._inner.current_key = key

    def set_current_key(self, key: Any) -> None:
        self._inner.current_key = key

    def get_current_key(self) -> Any:
        return self._inner.current_key

    @property
    def ttl_clock(self) -> Any:
        return getattr(self._inner, "ttl_clock", None)

    @ttl_clock.setter
    def ttl_clock(self, clock: Any) -> None:
        self._inner.ttl_clock = clock

    @property
    def delegate(self) -> Any:
        """The wrapped keyed backend."""
        return self._inner

    # -- handles --------------------------------------------------------------------------------------------------

    def get_state(self, descriptor: StateDescriptor) -> State:
        """The wrapped backend's handle for `descriptor`, wrapped so its writes are logged."""
        inner = self._inner.get_state(descriptor)
        name = descriptor.name
        known = self._handles.get(name)
        if known is not None and known._delegate is inner:
            return known  # type: ignore[return-value]  # every LoggedState handle is also a State
        kind = descriptor.kind
        handle = (LOGGED if descriptor.ttl_config is None else LOGGED_WITH_TTL)[kind](inner, self, name)
        self._kinds[name] = kind.value
        self._handles[name] = handle
        return handle  # type: ignore[return-value]

    def value_table(self, name: str) -> MutableMapping[Any, Any]:
        """The wrapped backend's value table of `name`, whose writes are logged."""
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = LoggedTable(self._inner.value_table(name), self._log, name)
            self._kinds.setdefault(name, StateKind.VALUE.value)
        return table

    def keys(self, state_name: str) -> Iterator[Any]:
        return self._inner.keys(state_name)  # type: ignore[no-any-return]

    def apply_to_all_keys(self, descriptor: StateDescriptor, function: Callable[[Any, State], None]) -> None:
        """`function(key, state)` for every key with an entry; what it changes through `state` is logged."""
        handle = self.get_state(descriptor)
        self._inner.apply_to_all_keys(descriptor, lambda key, _inner: function(key, handle))

    def _raw(self, name: str) -> MutableMapping[Any, Any]:
        """The wrapped backend's own value table of `name` (not logged): where a raw change's value is read."""
        return self._inner.value_table(name)  # type: ignore[no-any-return]

    # -- checkpoints ----------------------------------------------------------------------------------------------

    def snapshot(self, checkpoint_id: int, snapshot_type: SnapshotType = SnapshotType.CHECKPOINT) -> Any:
        """A savepoint is the wrapped backend's canonical snapshot. A checkpoint cuts the log into a segment and
        refers to the last materialization and the segments since; it may start a materialization."""
        if snapshot_type is SnapshotType.SAVEPOINT:
            return self._inner.snapshot(checkpoint_id, snapshot_type)
        self._check_disposed()
        self._adopt_materialization()
        self._cut_log()
        forced = self._forced
        if forced is not None and forced.error is not None:
            forced = self._forced = None
        if forced is None and self._needs_full_materialization():
            forced = self._forced = self._start_materialization()
            self._segments.clear()  # everything so far is in it
        elif forced is None and self._materialization_due():
            self._begin_background_materialization()
        return _PendingChangelogSnapshot(self, checkpoint_id, self._materialized, forced, list(self._segments))

    def _cut_log(self) -> None:
        """The changes logged since the last cut become the next segment (pickled now: later writes, and values
        changed in place later, cannot reach it)."""
        log = self._log
        if log:
            kinds, compress = dict(self._kinds), self._settings.compression
            self._segments.append(PendingSegment(self._next_segment, log, kinds, compress))
            log.clear()  # the same list object: every handle appends to it
            self._next_segment += 1

    def _needs_full_materialization(self) -> bool:
        return self._forced_reason is not None

    def _materialization_due(self) -> bool:
        if not self._settings.periodic_materialize or self._in_flight is not None or self._writer is None:
            return False
        if not self._segments:
            return False  # nothing logged since the last materialization: it would store the same state again
        return (self._clock() - self._last_materialization) * 1000 >= self._settings.materialize_interval_ms

    def trigger_materialization(self) -> Future[int] | None:
        """Start a materialization now (on the task thread; the upload runs on the materialization thread);
        its future, or None when one is in flight already or no checkpoint has run yet (it provides the
        storage). The next checkpoint after it has finished refers to it."""
        self._check_disposed()
        if self._in_flight is not None or self._writer is None:
            return None
        self._cut_log()
        return self._begin_background_materialization()

    def _begin_background_materialization(self) -> Future[int]:
        materialization = self._start_materialization()
        future = _materialization_executor().submit(materialization.persist, self._writer, self._owner)
        self._in_flight = (materialization, future)
        return future

    def _start_materialization(self) -> Materialization:
        """The synchronous part of a materialization: the wrapped backend's snapshot, on the task thread. Every
        change logged so far is in it."""
        self._last_materialization = self._clock()
        materialization_id = next(self._materialization_ids)
        pending = self._inner.snapshot(materialization_id, SnapshotType.CHECKPOINT)
        logger.debug("%s: materialization %d started", self._what, materialization_id - MATERIALIZATION_ID_BASE + 1)
        return Materialization(materialization_id, self._next_segment, pending)

    def _adopt_materialization(self) -> None:
        """Take a finished materialization as the base of the next checkpoints (on the task thread)."""
        if self._in_flight is None:
            return
        materialization, future = self._in_flight
        if not future.done():
            return
        self._in_flight = None
        error = future.exception()
        if error is not None:
            self._failures += 1
            materialization.discard()
            if self._failures > self._settings.max_failures_allowed:
                raise StateError(
                    f"{self._what}: materialization failed {self._failures} times in a row, more than "
                    f"state.changelog.max-failures-allowed ({self._settings.max_failures_allowed}); the last "
                    f"error: {type(error).__name__}: {error}"
                ) from error
            logger.warning(
                "%s: materialization %d failed (%d of %d failures allowed), retried at the next interval: %s: %s",
                self._what,
                materialization.materialization_id - MATERIALIZATION_ID_BASE + 1,
                self._failures,
                self._settings.max_failures_allowed,
                type(error).__name__,
                error,
            )
            return
        self._use_materialization(materialization)

    def _use_materialization(self, materialization: Materialization) -> None:
        result = materialization.result
        assert result is not None
        self._failures = 0
        self._materialized = result
        dropped = [segment for segment in self._segments if segment.number < result.up_to_segment]
        self._segments = [segment for segment in self._segments if segment.number >= result.up_to_segment]
        self._inner.notify_checkpoint_complete(result.materialization_id)  # RocksDB: the next one's base
        logger.info(
            "%s: materialization %d done: %d bytes of state stored in %.0f ms; %d log segment(s) before it "
            "are no longer replayed",
            self._what,
            result.materialization_id - MATERIALIZATION_ID_BASE + 1,
            result.size,
            materialization.duration * 1000,
            len(dropped),
        )

    def _checkpoint_written(self, forced: Materialization | None, writer: Any, uploaded: int) -> None:
        """Called by a checkpoint's asynchronous part once it stored what it needed (I/O thread)."""
        if self._writer is None:
            self._writer = writer
        self.last_checkpoint_upload = uploaded

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        forced = self._forced
        if forced is not None and forced.result is not None:
            self._forced = None
            self._forced_reason = None
            self._use_materialization(forced)
        self._adopt_materialization()

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Nothing to undo: a segment an aborted checkpoint stored is reused by the next one."""

    # -- restore --------------------------------------------------------------------------------------------------

    def restore(
        self, handles: Sequence[Any], reader: StateReader, checkpoint_id: int | None = None, owned: bool = False
    ) -> None:
        """Restore materializations (and any plain handles: a savepoint, a checkpoint taken without the changelog)
        into the wrapped backend, then replay the changes logged after them."""
        started = time.monotonic()
        changelog, plain, applied = restore_with_changelog(self._inner, handles, reader, self._kinds)
        own = (
            owned
            and not plain
            and len(changelog) == 1
            and changelog[0].key_group_range == self.key_group_range
            and changelog[0].max_parallelism == self.max_parallelism
        )
        if own:
            base = changelog[0]
            self._materialized = base.materialized
            self._segments = [PendingSegment.of_stored(segment) for segment in base.changes]
            self._next_segment = base.next_segment()
        elif handles:
            self._forced_reason = "rescaled" if changelog else "restored from a snapshot without a changelog"
        logger.info(
            "%s restored %d materialization(s) and %d snapshot(s), replayed %d change(s) in %.0f ms%s",
            self._what,
            sum(1 for handle in changelog if handle.materialized is not None),
            len(plain),
            applied,
            (time.monotonic() - started) * 1000,
            "" if own or not handles else "; the next checkpoint stores a full materialization",
        )

    def snapshot_key_groups(self) -> KeyedStateSnapshot:
        return self._inner.snapshot_key_groups()  # type: ignore[no-any-return]

    def restore_key_groups(self, snapshots: list[KeyedStateSnapshot]) -> None:
        """State written in without the log: the next checkpoint stores a full materialization."""
        self._inner.restore_key_groups(snapshots)
        if any(not snapshot.is_empty() for snapshot in snapshots):
            self._forced_reason = "state restored in memory"

    def dispose(self) -> None:
        if self._disposed:
            return
        self._disposed = True
        self._log.clear()
        self._segments.clear()
        if self._forced is not None:
            self._forced.discard()
            self._forced = None
        self._in_flight = None  # a running upload finishes on its own; nothing will refer to it
        self._inner.dispose()

    def _check_disposed(self) -> None:
        if self._disposed:
            raise StateError(f"{self._what} is disposed: the task has closed")


class _PendingChangelogSnapshot:
    """A changelog checkpoint between its two parts: what it refers to is fixed; storing the segments (and a
    forced materialization) is the asynchronous part."""

    __slots__ = ("_backend", "_checkpoint_id", "_materialized", "_forced", "_segments")

    def __init__(
        self,
        backend: ChangelogKeyedStateBackend,
        checkpoint_id: int,
        materialized: MaterializedStateHandle | None,
        forced: Materialization | None,
        segments: list[PendingSegment],
    ) -> None:
        self._backend = backend
        self._checkpoint_id = checkpoint_id
        self._materialized = materialized
        self._forced = forced
        self._segments = segments

    def write(self, writer: Any) -> ChangelogStateBackendHandle:
        backend = self._backend
        started = time.monotonic()
        uploaded = 0
        materialized = self._materialized
        if self._forced is not None:
            uploaded += self._forced.persist(writer, backend._owner)
            materialized = self._forced.result
        for segment in self._segments:
            uploaded += segment.persist(backend._storage, backend._owner)
        changes = tuple(segment.stored for segment in self._segments if segment.stored is not None)
        handle = ChangelogStateBackendHandle(backend.max_parallelism, backend.key_group_range, materialized, changes)
        backend._checkpoint_written(self._forced, writer, uploaded)
        logger.debug(
            "%s: checkpoint %d stored %d bytes in %.0f ms (%d segment(s) since materialization %s)",
            backend._what,
            self._checkpoint_id,
            uploaded,
            (time.monotonic() - started) * 1000,
            len(changes),
            materialized.materialization_id - MATERIALIZATION_ID_BASE + 1 if materialized is not None else "none",
        )
        return handle

    def discard(self) -> None:
        """Nothing of this checkpoint's own to drop: segments stay for the next checkpoint."""
