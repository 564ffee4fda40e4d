"""Buffer debloating (FLIP-183, `taskmanager.network.memory.buffer-debloat.enabled`): the in-flight data on a
task's input channels adapts to how fast the task processes it, so that what is queued takes about
`.target` (1 s by default) to drain — and an aligned barrier queued behind it waits about that long at most.

A channel holds a fixed number of buffers (its capacity); what adapts is the buffer size, here in records (a
fluvial buffer is a list of records). Every `.period` the consumer measures its throughput (records taken per
second: a slowdown at once, a speed-up smoothed), computes the size that makes `(capacity + 1) × channels` buffers hold `throughput × target`
records, and announces it to its channels when it changed by more than a quarter (Flink's threshold; the
first size, before any measurement, is small, so a job does not start with its queues at their largest); a
LocalChannel's producer reads it at once, a remote one with the next credit frame. Producers then cut their
buffers to that size (`RecordWriter.emit`), and a source reads no more per step than its channels take.
"""

from __future__ import annotations

from typing import Any

from fluvial.runtime.deployment import BufferDebloatSettings

MAX_BUFFER_SIZE = 1024  # records: a source's poll (input_processor.SOURCE_BATCH_SIZE), buffers' size undebloated
INITIAL_BUFFER_SIZE = 64  # records per buffer until the first measurement
SMOOTHING = 0.3  # weight of the newest throughput sample
THRESHOLD = 0.25  # relative change below which the size is not announced again


class BufferDebloater:
    """One task's input side. `update(now_ms, records_in)` on the task thread each period; it announces a new
    size to the channels (`set_buffer_size`) and returns the current one."""

    def __init__(self, settings: BufferDebloatSettings, channels: list[Any], started_ms: int) -> None:
        self._settings = settings
        self._channels = channels
        # a channel holds its capacity, plus the one buffer its producer may add after it saw room
        self._buffers = max(1, sum(getattr(channel, "capacity", 1) + 1 for channel in channels))
        self._last_ms = started_ms
        self._last_records = 0
        self._throughput: float | None = None
        self.buffer_size = INITIAL_BUFFER_SIZE
        self.estimated_time_to_consume_ms = 0
        for channel in channels:
            channel.set_buffer_size(INITIAL_BUFFER_SIZE)

    def update(self, now_ms: int, records_in: int) -> int:
        elapsed = now_ms - self._last_ms
        if elapsed <= 0:
            return self.buffer_size
        sample = (records_in - self._last_records) * 1000 / elapsed
        self._last_ms, self._last_records = now_ms, records_in
        previous = self._throughput
        # a slowdown counts at once (queued data would take longer than the target), a speed-up smoothed
        throughput = self._throughput = (
            sample if previous is None or sample < previous else SMOOTHING * sample + (1 - SMOOTHING) * previous
        )
        wanted = int(throughput * self._settings.target_ms / 1000 / self._buffers)
        wanted = max(1, min(MAX_BUFFER_SIZE, wanted))
        queued = self._buffers * self.buffer_size
        self.estimated_time_to_consume_ms = int(queued * 1000 / throughput) if throughput > 0 else 0
        if abs(wanted - self.buffer_size) > THRESHOLD * self.buffer_size:
            self.buffer_size = wanted
            for channel in self._channels:
                channel.set_buffer_size(wanted)
        return self.buffer_size
