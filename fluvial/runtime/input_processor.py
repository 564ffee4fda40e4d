"""The input side of a task: a source reader, or an input gate over network channels. Each `step` moves a
bounded amount of input into the chain and reports what happened, so tasks sharing a thread take turns."""

from __future__ import annotations

import enum
from typing import Any, Callable

from fluvial.datastream.connectors.source import assign_splits
from fluvial.runtime.channels import Channel
from fluvial.runtime.records import EndOfInput, RecordBatch, Watermark

SOURCE_BATCH_SIZE = 1024
ITEMS_PER_STEP = 4


class StepResult(enum.Enum):
    PROGRESS = "progress"  # did work; step again soon
    IDLE = "idle"  # nothing to do until input arrives
    BLOCKED = "blocked"  # output channels are full
    END_OF_INPUT = "end_of_input"  # every input has ended


class SourceInput:
    """Reads the splits assigned to this subtask; `poll` never blocks (the reader's contract)."""

    def __init__(self, source: Any, task_info: Any) -> None:
        self._source = source
        self._task_info = task_info
        self.reader: Any = None

    def open(self) -> None:
        info = self._task_info
        splits = assign_splits(self._source.create_splits(info.parallelism), info.parallelism, info.subtask_index)
        self.reader = self._source.create_reader(info)
        self.reader.add_splits(splits)

    def step(self, head: Callable[[RecordBatch], None]) -> StepResult:
        values = self.reader.poll(SOURCE_BATCH_SIZE)
        if values is None:
            return StepResult.END_OF_INPUT
        if not values:
            return StepResult.IDLE
        head(RecordBatch(values))
        return StepResult.PROGRESS

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


class NetworkInput:
    """An input gate: polls its channels round robin and dispatches each item by the channel's input number.

    `dispatch[i]` receives buffers of channel i (the head's process_batch, process_batch1 or _2). A channel
    that delivered END_OF_INPUT is dropped from the rotation; input ends when all have.
    """

    def __init__(self, channels: list[Channel], dispatch: list[Callable[[RecordBatch], None]],
                 on_watermark: Callable[[int, Watermark], None] | None = None) -> None:
        self._channels = list(channels)
        self._dispatch = list(dispatch)
        self._open = list(range(len(channels)))
        self._next = 0
        self._on_watermark = on_watermark

    def open(self) -> None:
        pass

    def _poll(self) -> tuple[Any, int]:
        open_channels = self._open
        count = len(open_channels)
        start = self._next
        for offset in range(count):
            position = (start + offset) % count
            index = open_channels[position]
            item = self._channels[index].poll()
            if item is not None:
                self._next = position + 1
                return item, index
        return None, -1

    def step(self, head: Any) -> StepResult:
        progressed = False
        for _ in range(ITEMS_PER_STEP):
            item, index = self._poll()
            if item is None:
                break
            progressed = True
            if type(item) is RecordBatch:
                self._dispatch[index](item)
            elif isinstance(item, EndOfInput):
                self._open.remove(index)
                self._next = 0
                if not self._open:
                    return StepResult.END_OF_INPUT
            elif isinstance(item, Watermark) and self._on_watermark is not None:
                self._on_watermark(index, item)
        return StepResult.PROGRESS if progressed else StepResult.IDLE

    def close(self) -> None:
        pass
