"""FusedOperator: a run of chained operators executed as one (`runtime.fused_loop`): unkeyed map / filter /
flat_map operators, optionally headed by a running keyed reduce, where each member's single output is the next
member. The chain builds it (`OperatorChain`, step 2); the observable behaviour is that of the separate
operators: the same values in the same order with the same timestamps, failures named after the member that
failed, and the reduce's state checkpointed and restored under its own operator id.

A reduce head folds each record into its key's aggregate and passes the aggregate on, record by record, inside
the one loop (the heap's state table is a dict). When the state costs per access (RocksDB) or records carry
timestamps, the reduce folds the whole buffer its own way first (grouped by key) and the rest of the run
follows over its output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard

from fluvial.runtime.fused_loop import Step, fused_loop, returned_none
from fluvial.runtime.operators.base import (
    StreamOperator,
    close_each,
    failing_operator,
    is_checkpointed_function,
    key_by_name,
    label_failure,
)
from fluvial.runtime.operators.basic import (
    FilterOperator,
    FlatMapOperator,
    KeyedReduceOperator,
    MapOperator,
    batch_method,
)
from fluvial.runtime.records import RecordBatch

if TYPE_CHECKING:
    from fluvial.checkpoint.snapshots import OperatorRestore, OperatorSnapshot

_STEP_OF = {MapOperator: Step.MAP, FilterOperator: Step.FILTER, FlatMapOperator: Step.FLAT_MAP}


def is_fusable(operator: StreamOperator) -> TypeGuard[MapOperator | FilterOperator | FlatMapOperator]:
    """Unkeyed map, filter and flat_map operators without operator state of their own (a CheckpointedFunction
    keeps its own state under its own operator id, so it stays a separate operator)."""
    return (
        type(operator) in _STEP_OF
        and operator.spec.key_selector is None
        and not is_checkpointed_function(operator.spec.function)
        and batch_method(operator.spec.function) is None
    )


def can_head_a_run(operator: StreamOperator) -> TypeGuard[KeyedReduceOperator]:
    """A running keyed reduce (not BATCH mode's, which emits at the end) may head a fused run."""
    return type(operator) is KeyedReduceOperator


class FusedOperator(StreamOperator):
    members: list[StreamOperator]

    def __init__(self, members: list[StreamOperator]) -> None:
        head = members[0]
        # the head's spec without its key: the fused operator must not build a keyed backend of its own
        super().__init__(dataclasses.replace(head.spec, key_selector=None), head.context)
        self.members = members
        self.name = " -> ".join(member.name for member in members)
        self._reduce = head if can_head_a_run(head) else None
        self.keyed_backend = head.keyed_backend  # the reduce's state is the fused operator's state
        tail = members[1:] if self._reduce is not None else members
        self._tail = [member for member in tail if is_fusable(member)]
        if len(self._tail) != len(tail):
            raise ValueError(
                f"'{self.name}' cannot run as one loop: only map, filter and flat_map operators follow its head"
            )

    def initialize_state(self, restore: OperatorRestore | None) -> None:
        """Only a reduce head has state (the other members are stateless, see `is_fusable`)."""
        if self._reduce is not None:
            self._reduce.initialize_state(restore)

    def open(self) -> None:
        for member in self.members:
            member.output = self.output
            member.open()  # opens the user function; binds the member's own functions
        self._steps = [(_STEP_OF[type(member)], member._fn, member.name) for member in self._tail]
        steps, functions, names = (list(column) for column in zip(*self._steps))
        self._run_tail = fused_loop(steps, functions, names)
        self._run: Callable[[Any], list[Any]] = self._run_tail
        self._loops = [self._run_tail]  # the generated loops, which name the member that raised in them
        reduce = self._reduce
        # the generated loop folds without setting the backend's current key: a ReduceFunction with keyed state
        # of its own (created in open()) folds through its operator's key-setting path instead
        if reduce is not None and type(reduce._table) is dict and not reduce._sets_key:
            self._run = run = fused_loop(
                [Step.REDUCE, *steps],
                [reduce._fn, *functions],
                [reduce.name, *names],
                key=reduce._key,
                table=reduce._table,
                key_name=key_by_name(reduce.spec.key_selector),
                new_key_check=reduce.new_key_check,
            )
            self._loops.append(run)
        elif reduce is not None:
            self._run = lambda values: self._run_tail(reduce.aggregates(values))
        self._emit = self.output.collect
        self._running = self.name  # the member the timestamped path is running

    def process_batch(self, batch: RecordBatch) -> None:
        timestamps = batch.timestamps
        timestamped = timestamps is not None
        try:
            if timestamps is not None:
                values = batch.values
                if self._reduce is not None:
                    self._running = self._reduce.name
                    values = self._reduce.aggregates(values)
                out, stamps = self._run_timestamped(values, timestamps)
            else:
                out, stamps = self._run(batch.values), None
        except BaseException as error:
            key_by = self._reduce.key_failure_name(error) if self._reduce is not None else None
            label_failure(error, key_by or (self._running if timestamped else self._member_that_raised(error)))
            raise
        if out:
            self._emit(RecordBatch(out, stamps))

    def _run_timestamped(self, values: Any, stamps: list[Any]) -> tuple[Any, list[Any]]:
        """Step by step over (values, timestamps): a flat_map's values keep their input's timestamp."""
        for step, fn, name in self._steps:
            self._running = name  # once per step and buffer: what names the member if `fn` raises
            if step is Step.MAP:
                values = [fn(v) for v in values]
            elif step is Step.FILTER:
                kept = [(v, ts) for v, ts in zip(values, stamps) if fn(v)]
                values, stamps = [p[0] for p in kept], [p[1] for p in kept]
            else:
                out_values: list[Any] = []
                out_stamps: list[Any] = []
                for v, ts in zip(values, stamps):
                    results = fn(v)
                    if results is None:
                        returned_none(name, v)
                    for item in results:
                        out_values.append(item)
                        out_stamps.append(ts)
                values, stamps = out_values, out_stamps
        return values, stamps

    def snapshot_state(self, checkpoint_id: int, snapshot_type: Any) -> OperatorSnapshot | None:
        return self._reduce.snapshot_state(checkpoint_id, snapshot_type) if self._reduce is not None else None

    def close(self) -> None:
        """Close every member, as the chain closes every operator: a member whose close raises must not keep the
        ones after it from releasing what they hold. The first error is raised, the others noted on it."""
        errors = close_each(self.members)
        if errors:
            first = errors[0]
            for error in errors[1:]:
                first.add_note(f"closing '{failing_operator(error)}' also failed: {type(error).__name__}: {error}")
            raise first

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for member in self.members:
            member.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for member in self.members:
            member.notify_checkpoint_aborted(checkpoint_id)

    def _member_that_raised(self, error: BaseException) -> str:
        """The member that was running when `error` was raised in the generated loop (one frame runs them all):
        the line the loop's innermost frame was on names it; else the innermost frame of a member's own
        function."""
        loops = {run.loop_code: run.member_at_line for run in self._loops}
        functions = [(member._fn, member.name) for member in self._tail]
        if self._reduce is not None:
            functions.insert(0, (self._reduce._fn, self._reduce.name))
        codes = {}
        for function, name in functions:
            code = getattr(getattr(function, "__func__", function), "__code__", None)
            if code is not None:
                codes[code] = name
        in_loop = by_code = None
        traceback = error.__traceback__
        while traceback is not None:
            code = traceback.tb_frame.f_code
            if code in loops:
                in_loop = loops[code].get(traceback.tb_lineno, in_loop)
            else:
                by_code = codes.get(code, by_code)
            traceback = traceback.tb_next
        return in_loop or by_code or self.name
