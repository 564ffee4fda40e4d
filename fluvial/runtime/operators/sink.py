"""Sink operators: Sink V2 writers (`sink_to`), SinkFunctions (`add_sink`), print, and collect.

Two-phase commit: committables are prepared at each checkpoint and committed when it completes. At end of
input a bounded job's writer is flushed; with checkpoints its last committables are prepared by the task's
final checkpoint and committed when that completes (FLIP-147), so nothing is ever committed that a restore
would replay. Without checkpoints (or with checkpoints-after-tasks-finish off) they are committed at end of
input, so a bounded job's output is visible when `execute()` returns either way.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fluvial.runtime.operators.base import StreamOperator, user_method
from fluvial.runtime.records import RecordBatch, Watermark

if TYPE_CHECKING:
    from fluvial.checkpoint.snapshots import OperatorRestore
    from fluvial.datastream import transformations as t


class SinkWriterOperator(StreamOperator):
    """Runs a Sink V2 writer with two-phase commit.

    At a checkpoint barrier: flush, `prepare_commit()`, and keep the committables under that checkpoint's id
    (they are part of the checkpoint's operator state). When the checkpoint completes, commit everything up to
    it. After a restore, the committables recorded in the checkpoint are committed again (commit is idempotent),
    so output that was prepared before a failure is never lost and never duplicated. A bounded job's final
    output is committed through its final checkpoint, or at end of input when there is none (module docstring).
    """

    def initialize_state(self, restore: OperatorRestore | None) -> None:
        """The writer's state and the committables a checkpoint recorded; those are committed again at open
        (commit is idempotent), so prepared output survives a failure."""
        self._restored_state = restore.operator_state if restore is not None else None
        self._pending: dict[int, list[Any]] = {}

    def open(self) -> None:
        sink = self.spec.function
        state = self._restored_state or {}
        info = dataclasses.replace(self.context.task_info, operator_id=self.context.operator_id)
        self._writer = sink.create_writer(info, state.get("writer") if self._restored_state is not None else None)
        self._write_batch = self._writer.write_batch
        self._write_watermark: Callable[[int], None] | None = getattr(self._writer, "write_watermark", None)
        timed = getattr(self._writer, "set_processing_time_service", None)
        if timed is not None:  # a writer that flushes on processing-time timers (Flink's Sink InitContext)
            timed(self.context.processing_time_service)
        recovered = state.get("committables", [])
        if recovered:
            sink.commit(recovered)

    def process_batch(self, batch: RecordBatch) -> None:
        self._write_batch(batch.values)

    def process_watermark(self, watermark: Watermark) -> None:
        if self._write_watermark is not None:
            self._write_watermark(watermark.timestamp)
        super().process_watermark(watermark)

    def snapshot_operator_state(self, checkpoint_id: int) -> dict[str, list[Any]]:
        writer = self._writer
        writer.flush(False)
        committables = writer.prepare_commit()
        if committables:
            self._pending[checkpoint_id] = committables
        pending = [c for cid in sorted(self._pending) for c in self._pending[cid]]
        return {"writer": list(writer.snapshot_state()), "committables": pending}

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = [cid for cid in self._pending if cid <= checkpoint_id]
        committables = [c for cid in sorted(done) for c in self._pending[cid]]
        if committables:
            self.spec.function.commit(committables)
        for cid in done:
            del self._pending[cid]

    def finish(self) -> None:
        self._writer.flush(True)
        if self.context.final_checkpoint:
            return  # the final checkpoint prepares what is left, and commits it when it completes
        committables = [c for cid in sorted(self._pending) for c in self._pending[cid]]
        committables.extend(self._writer.prepare_commit())
        self._pending.clear()
        if committables:
            self.spec.function.commit(committables)

    def close(self) -> None:
        writer = getattr(self, "_writer", None)
        if writer is not None:
            writer.close()


class SinkFunctionContext:
    """The context `SinkFunction.invoke(value, context)` receives."""

    __slots__ = ("_task_info",)

    def __init__(self, task_info: Any) -> None:
        self._task_info = task_info

    def current_processing_time(self) -> int:
        from fluvial.common.time import current_millis

        return current_millis()

    def timestamp(self) -> int | None:
        return None


class SinkFunctionOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        function = self.spec.function
        context = SinkFunctionContext(self.context.task_info)
        if hasattr(function, "invoke_batch"):
            invoke_batch = function.invoke_batch
            self._write: Callable[[Sequence[Any]], object] = lambda values: invoke_batch(values, context)
        else:
            call = user_method(function, "invoke")
            self._write = lambda values: [call(value) for value in values] and None

    def process_batch(self, batch: RecordBatch) -> None:
        self._write(batch.values)


class PrintOperator(StreamOperator):
    """PyFlink's print: `str()` of untyped values, typed values in Flink's text, `N> ` when parallel."""

    spec: t.PrintSpec

    def open(self) -> None:
        from fluvial.common.print_prefix import print_prefix

        if self.spec.type_info is not None:
            from fluvial.common.print_format import format_for_print

            self._format = format_for_print
        info = self.context.task_info
        self._prefix = print_prefix(info.subtask_index, info.parallelism, self.spec.sink_identifier)
        self._type_info = self.spec.type_info

    def process_batch(self, batch: RecordBatch) -> None:
        stream = sys.stderr if self.spec.to_stderr else sys.stdout
        prefix, type_info = self._prefix, self._type_info
        if type_info is None:
            text = "".join([f"{prefix}{value}\n" for value in batch.values])
        else:
            text = "".join([f"{prefix}{self._format(value, type_info)}\n" for value in batch.values])
        stream.write(text)

    def finish(self) -> None:
        (sys.stderr if self.spec.to_stderr else sys.stdout).flush()

    def close(self) -> None:
        """A task stopped with a savepoint closes without finishing: what it printed is flushed all the same."""
        try:
            self.finish()
        finally:
            super().close()


class CollectOperator(StreamOperator):
    """Hands buffers to the client of `execute_and_collect` through the cluster's collect target, without ever
    waiting on the task's thread: while the target has no room (the client is behind), buffers wait here and the
    operator holds its input (`input_blocked`), so the task is back-pressured and the thread serves other tasks.
    At most what one input step produced waits here."""

    holds_input = True
    spec: t.CollectSpec

    def open(self) -> None:
        if self.context.collect_target is None:
            raise RuntimeError("collect sink deployed without a collect target")
        self._target = self.context.collect_target(self.spec.collect_id)
        self._pending: deque[Sequence[Any]] = deque()

    def process_batch(self, batch: RecordBatch) -> None:
        self._pending.append(batch.values)
        self._flush()

    def _flush(self) -> None:
        pending, target = self._pending, self._target
        while pending and target.writable():
            target.send(pending.popleft())

    def input_blocked(self) -> bool:
        self._flush()
        return bool(self._pending)

    def finish(self) -> None:
        self._flush()

    def is_quiescent(self) -> bool:
        self._flush()
        return not self._pending
