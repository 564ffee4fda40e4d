"""upsert-kafka's sink buffer (`sink.buffer-flush.max-rows` with `sink.buffer-flush.interval`): Flink's
reducing upsert writer. Each row goes into a buffer keyed by the primary key, where it replaces the key's
earlier change, so a hot key costs one message per flush instead of one per change. The buffer is written to
the Kafka writer when it holds `max-rows` keys, every `interval` of processing time, and before each checkpoint
barrier and at end of input (the writer's `flush`), so a completed checkpoint never leaves a change in it and
the buffer needs no state of its own. An UPDATE_BEFORE is not buffered: upsert-kafka writes none.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from typing import Any

from fluvial.common.row import RowKind
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.sink import Sink, SinkWriter
from fluvial.table.environment_settings import parse_duration_millis
from fluvial.table.errors import ValidationException

__all__ = ["ReducingUpsertSink", "ReducingUpsertWriter", "buffer_flush_options"]

logger = logging.getLogger(__name__)

MAX_ROWS = "sink.buffer-flush.max-rows"
INTERVAL = "sink.buffer-flush.interval"
OPTIONS = {MAX_ROWS, INTERVAL}


def buffer_flush_options(options: dict[str, str]) -> tuple[int, int] | None:
    """(max rows, interval ms) when the buffer is on; None when both options are absent or 0 (Flink's
    default); a clear error when only one is set above 0."""
    text = options.get(MAX_ROWS, "0")
    if not text.isdigit():
        raise ValidationException(f"'{MAX_ROWS}' is a number of rows, got '{text}'")
    max_rows = int(text)
    interval = parse_duration_millis(options.get(INTERVAL, "0"))
    if max_rows == 0 and interval == 0:
        return None
    if max_rows == 0 or interval <= 0:
        raise ValidationException(
            f"'{MAX_ROWS}' and '{INTERVAL}' must be set to be greater than zero together to enable sink buffer "
            f"flushing; got {max_rows} rows and {options.get(INTERVAL, '0')}"
        )
    return max_rows, interval


class ReducingUpsertSink(Sink):
    """Wraps upsert-kafka's KafkaSink: its writers buffer the last change per key (module docstring)."""

    def __init__(self, inner: Sink, key_indexes: Sequence[int], max_rows: int, interval_ms: int) -> None:
        self.inner = inner
        self.key_indexes = tuple(key_indexes)
        self.max_rows = max_rows
        self.interval_ms = interval_ms

    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> ReducingUpsertWriter:
        return ReducingUpsertWriter(self.inner.create_writer(task_info, restored_state), self)

    def commit(self, committables: list[Any]) -> None:
        self.inner.commit(committables)

    def default_name(self) -> str:
        return self.inner.default_name()

    def locations(self) -> tuple[str, ...]:
        return self.inner.locations()


class ReducingUpsertWriter(SinkWriter):
    """The buffer before one subtask's Kafka writer."""

    def __init__(self, inner: SinkWriter, sink: ReducingUpsertSink) -> None:
        self._inner = inner
        self._max_rows = sink.max_rows
        self._interval = sink.interval_ms
        indexes = sink.key_indexes
        self._key_of = operator.itemgetter(*indexes) if indexes else (lambda values: ())
        self._buffer: dict[Any, Any] = {}
        self._time: Any = None
        self._last_flush = 0
        self._closed = False

    def set_processing_time_service(self, service: Any) -> None:
        """The task's processing-time service (given by the sink operator before the first record): the
        interval flush is a timer on it, so a quiet stream's last changes go out too."""
        self._time = service
        self._last_flush = service.current_processing_time()
        self._schedule()

    def _schedule(self) -> None:
        if not self._closed and self._time is not None:
            self._time.register_timer(self._time.current_processing_time() + self._interval, self._on_timer)

    def _on_timer(self, now: int) -> None:
        if self._closed:
            return
        if now >= self._last_flush + self._interval:
            self._flush_buffer()
        self._schedule()

    def write_batch(self, values: list) -> None:
        buffer, key_of, update_before, max_rows = self._buffer, self._key_of, RowKind.UPDATE_BEFORE, self._max_rows
        for row in values:
            if row._row_kind is update_before:
                continue
            buffer[key_of(row._values)] = row
            if len(buffer) >= max_rows:
                self._flush_buffer()

    def _flush_buffer(self) -> None:
        if self._time is not None:
            self._last_flush = self._time.current_processing_time()
        if not self._buffer:
            return
        rows = list(self._buffer.values())
        self._buffer.clear()
        self._inner.write_batch(rows)

    def flush(self, end_of_input: bool) -> None:
        self._flush_buffer()
        self._inner.flush(end_of_input)

    def write_watermark(self, timestamp: int) -> None:
        self._inner.write_watermark(timestamp)

    def prepare_commit(self) -> list[Any]:
        return self._inner.prepare_commit()

    def snapshot_state(self) -> list[Any]:
        return self._inner.snapshot_state()

    def close(self) -> None:
        self._closed = True
        if self._buffer:
            logger.debug(
                "closing with %d buffered upserts unwritten (the job failed or was cancelled)", len(self._buffer)
            )
        self._inner.close()
