"""`env.add_source(SourceFunction)`: a legacy push source (`run(ctx)` until done or `cancel()`) adapted to the
Source contract (`source.py`).

The function runs on a thread of its own (the reader's `poll` never blocks the task's mailbox) and hands
records over through a bounded queue, so a slow job makes `ctx.collect` wait. The source is not parallel
(one subtask) and keeps no position: after a failover `run` starts again. Contract for `run`: return when the
input ends, or soon after `cancel()`; an exception it raises fails the job.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from fluvial.common.errors import NotYetSupportedError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

__all__ = ["SourceFunctionSource"]

_QUEUE_CAPACITY = 1024


class _Cancelled(Exception):
    """Raised inside `collect` once the reader is closed, so a `run` that ignores `cancel()` still ends."""


class SourceContext:
    """What `run(ctx)` emits through (Flink's SourceFunction.SourceContext)."""

    def __init__(self, records: queue.Queue[Any], stopped: threading.Event) -> None:
        self._records = records
        self._stopped = stopped

    def collect(self, element: Any) -> None:
        while not self._stopped.is_set():
            try:
                self._records.put(element, timeout=0.05)
                return
            except queue.Full:
                continue
        raise _Cancelled()

    def collect_with_timestamp(self, element: Any, timestamp: int) -> None:
        raise NotYetSupportedError(
            "SourceContext.collect_with_timestamp is not supported yet; collect(element) and give the stream "
            "timestamps with assign_timestamps_and_watermarks(WatermarkStrategy...with_timestamp_assigner(...))"
        )

    def emit_watermark(self, watermark: Any) -> None:
        raise NotYetSupportedError(
            "SourceContext.emit_watermark is not supported yet; generate watermarks with "
            "assign_timestamps_and_watermarks(WatermarkStrategy...)"
        )

    def get_checkpoint_lock(self) -> Any:
        return threading.Lock()  # the source keeps no checkpointed position, so there is nothing to guard

    def close(self) -> None:
        pass


class SourceFunctionSource(Source[str]):
    def __init__(self, function: Any) -> None:
        self.function = function

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[str]:
        return ["source-function"]

    def create_reader(self, task_info: TaskInfo) -> SourceFunctionReader:
        return SourceFunctionReader(self.function, task_info)

    def max_parallelism(self) -> int | None:
        return 1

    def default_name(self) -> str:
        return "Custom Source"


class SourceFunctionReader(SourceReader[str]):
    def __init__(self, function: Any, task_info: TaskInfo) -> None:
        self._function = function
        self._records: queue.Queue[Any] = queue.Queue(_QUEUE_CAPACITY)
        self._stopped = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._name = task_info.task_name

    def add_splits(self, splits: list[str]) -> None:
        if splits and self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"{self._name} source function", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._function.run(SourceContext(self._records, self._stopped))
        except _Cancelled:
            pass
        except BaseException as error:  # noqa: BLE001 - handed to the task thread by poll()
            self._error = error

    def poll(self, max_records: int) -> list | None:
        out: list = []
        get = self._records.get_nowait
        try:
            while len(out) < max_records:
                out.append(get())
        except queue.Empty:
            pass
        if out:
            return out
        if self._error is not None:
            raise self._error
        if self._thread is not None and not self._thread.is_alive() and self._records.empty():
            return None
        return []

    def snapshot_state(self) -> list[str]:
        return ["source-function"]

    def close(self) -> None:
        self._stopped.set()
        cancel = getattr(self._function, "cancel", None)
        if callable(cancel):
            cancel()
        if self._thread is not None:
            self._thread.join(timeout=5)
