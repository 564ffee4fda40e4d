"""The broadcast state operator: `data.connect(rules.broadcast(descriptor)).process(f)` for a
BroadcastProcessFunction or, on a keyed data stream, a KeyedBroadcastProcessFunction (Flink's
CoBroadcastWithNonKeyedOperator and CoBroadcastWithKeyedOperator).

Input 1 is the data side: `process_element(value, ctx)` sees the broadcast state read-only, and on a keyed
stream its key's keyed state and timers. Input 2 is the broadcast side, whose every record reaches every
subtask (the BROADCAST partitioner): `process_broadcast_element(value, ctx)` may change the broadcast state and,
on a keyed stream, visit every key's state of a descriptor with `ctx.apply_to_keyed_state(descriptor, f)`.
Because every subtask sees the same broadcast records in the same order and only that side writes, every subtask
holds the same broadcast state; the read-only view on the data side keeps it so.

Broadcast state is operator state, one named map per descriptor, checkpointed by every subtask. On restore
every subtask takes one old subtask's copy, whatever the old and new parallelism (`checkpoint.restore`), so at
any parallelism all subtasks start from the same state, as in Flink.

In a BATCH job the broadcast side is processed first (Flink's order): data records wait until the broadcast
input has ended (its final watermark).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from fluvial.checkpoint.snapshots import BROADCAST_PREFIX
from fluvial.common.errors import StateError
from fluvial.datastream import functions as f
from fluvial.datastream import transformations as t
from fluvial.datastream.subtask_state import BroadcastState, ReadOnlyBroadcastState
from fluvial.datastream.timerservice import TimerService
from fluvial.runtime.operators.base import TwoInputStreamOperator, key_function, user_method
from fluvial.runtime.operators.operator_state import ReadOnlyBroadcastView, WritableBroadcastView
from fluvial.runtime.operators.process import ProcessContext, _PerRecordOperator
from fluvial.runtime.records import RecordBatch, Watermark
from fluvial.state.backend import NO_KEY

if TYPE_CHECKING:
    from fluvial.checkpoint.snapshots import OperatorRestore


class BroadcastStates:
    """The operator's broadcast states: one map per declared MapStateDescriptor, with a writable and a read-only
    view of each (built once)."""

    def __init__(self, descriptors: tuple[Any, ...], restored: dict[str, list[Any]] | None) -> None:
        self._maps: dict[str, dict[Any, Any]] = {}
        self.writable: dict[str, WritableBroadcastView] = {}
        self.read_only: dict[str, ReadOnlyBroadcastView] = {}
        for descriptor in descriptors:
            entries = dict((restored or {}).get(BROADCAST_PREFIX + descriptor.name, ()))
            self._maps[descriptor.name] = entries
            self.writable[descriptor.name] = WritableBroadcastView(entries, descriptor.name)
            self.read_only[descriptor.name] = ReadOnlyBroadcastView(entries, descriptor.name)

    @overload
    def view(self, descriptor: Any, writable: Literal[True]) -> WritableBroadcastView: ...

    @overload
    def view(self, descriptor: Any, writable: Literal[False]) -> ReadOnlyBroadcastView: ...

    def view(self, descriptor: Any, writable: bool) -> ReadOnlyBroadcastView:
        name = getattr(descriptor, "name", descriptor)
        views: Mapping[str, ReadOnlyBroadcastView] = self.writable if writable else self.read_only
        view = views.get(name)
        if view is None:
            declared = ", ".join(repr(n) for n in self._maps) or "none"
            raise StateError(
                f"broadcast state {name!r} was not declared on this stream (declared: {declared}): "
                "pass its MapStateDescriptor to broadcast(...)"
            )
        return view

    def snapshot(self) -> dict[str, list[Any]]:
        return {BROADCAST_PREFIX + name: list(entries.items()) for name, entries in self._maps.items()}


class DataSideContext(
    ProcessContext, f.BroadcastProcessFunction.ReadOnlyContext, f.KeyedBroadcastProcessFunction.OnTimerContext
):
    """The data side's context (and `on_timer`'s): the record's timestamp, the clocks, read-only broadcast
    state; on a keyed stream also the current key and the timer service."""

    __slots__ = ("_states", "_operator")

    def __init__(self, operator: BroadcastProcessOperator, timers: TimerService) -> None:
        super().__init__(operator.keyed_backend, timers)
        self._states = operator.broadcast_states
        self._operator = operator

    def get_broadcast_state(self, state_descriptor: Any) -> ReadOnlyBroadcastState[Any, Any]:
        return self._states.view(state_descriptor, writable=False)

    def current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._operator.current_watermark


class BroadcastSideContext(f.BroadcastProcessFunction.Context, f.KeyedBroadcastProcessFunction.Context):
    """The broadcast side's context: writable broadcast state and, on a keyed stream, every key's state. The
    record's timestamp is the one the operator's per-record driver set on the data side's context."""

    __slots__ = ("_operator",)

    def __init__(self, operator: BroadcastProcessOperator) -> None:
        self._operator = operator

    def timestamp(self) -> int | None:
        return self._operator.ctx.timestamp()

    def current_processing_time(self) -> int:
        return self._operator.ctx.current_processing_time()

    def current_watermark(self) -> int:
        return self._operator.current_watermark

    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState[Any, Any]:
        return self._operator.broadcast_states.view(state_descriptor, writable=True)

    def apply_to_keyed_state(self, state_descriptor: Any, function: Any) -> None:
        """`function(key, state)` for every key of this subtask that has `state_descriptor`'s state."""
        backend = self._operator.keyed_backend
        if backend is None:
            raise StateError("apply_to_keyed_state needs a keyed data stream: key_by(...) before connect(...)")
        backend.apply_to_all_keys(state_descriptor, function)


class BroadcastProcessOperator(TwoInputStreamOperator, _PerRecordOperator):
    """Input 1: data records; input 2: broadcast records (see the module docstring)."""

    spec: t.BroadcastProcessSpec
    ctx: DataSideContext

    def initialize_state(self, restore: OperatorRestore | None) -> None:
        restored = None
        if restore is not None:  # the broadcast maps leave the operator state a CheckpointedFunction would see
            restored = {
                name: restore.operator_state.pop(name)
                for name in list(restore.operator_state)
                if name.startswith(BROADCAST_PREFIX)
            }
        super().initialize_state(restore)
        self.broadcast_states = BroadcastStates(self.spec.descriptors, restored)
        self._waiting_data: list[RecordBatch] | None = [] if self.spec.batch else None  # BATCH: broadcast first

    def open(self) -> None:
        super().open()
        self.ctx = DataSideContext(self, self.ctx._timers)
        self._broadcast_ctx = BroadcastSideContext(self)
        ctx, broadcast_ctx = self.ctx, self._broadcast_ctx
        on_element = user_method(self.spec.function, "process_element")
        on_broadcast = user_method(self.spec.function, "process_broadcast_element")
        self._call1 = lambda value: on_element(value, ctx)
        self._call2 = lambda value: on_broadcast(value, broadcast_ctx)
        self._key1 = key_function(self.spec.key_selector) if self.spec.key_selector is not None else None

    def process_batch1(self, batch: RecordBatch) -> None:
        if self._waiting_data is not None:
            self._waiting_data.append(batch)
            return
        self.run(batch, self._call1, self._key1)

    def process_batch2(self, batch: RecordBatch) -> None:
        backend = self.keyed_backend
        if backend is not None:
            backend.current_key = NO_KEY  # keyed state on the broadcast side only through apply_to_keyed_state
        self.run(batch, self._call2, None)

    def process_watermark2(self, watermark: Watermark) -> None:
        if watermark.is_final:
            self._release_waiting_data()
        super().process_watermark2(watermark)

    def finish(self) -> None:
        self._release_waiting_data()
        super().finish()

    def _release_waiting_data(self) -> None:
        """BATCH: the broadcast input has ended, so the data records that waited for it are processed now."""
        waiting, self._waiting_data = self._waiting_data, None
        for batch in waiting or ():
            self.run(batch, self._call1, self._key1)

    def snapshot_operator_state(self, checkpoint_id: int) -> dict[str, list[Any]]:
        state = super().snapshot_operator_state(checkpoint_id)
        state.update(self.broadcast_states.snapshot())
        return state
