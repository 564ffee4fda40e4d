"""Placeholder valve so the runtime imports while the full WatermarkValve is written (replaced shortly)."""

from __future__ import annotations

from fluvial.common.time import MIN_WATERMARK


class WatermarkValve:
    def __init__(self, num_channels: int) -> None:
        self._marks = [MIN_WATERMARK] * num_channels
        self._idle = [False] * num_channels
        self._seen = [False] * num_channels
        self.current_watermark = MIN_WATERMARK

    def _advance(self) -> int | None:
        active = [m for m, i in zip(self._marks, self._idle) if not i]
        if not active:
            return None
        low = min(active)
        if low > self.current_watermark:
            self.current_watermark = low
            return low
        return None

    def input_watermark(self, channel: int, ts: int) -> int | None:
        if ts > self._marks[channel]:
            self._marks[channel] = ts
        self._idle[channel] = False
        return self._advance()

    def mark_idle(self, channel: int) -> int | None:
        self._idle[channel] = True
        return self._advance()

    def mark_active(self, channel: int) -> None:
        self._idle[channel] = False

    def is_idle(self) -> bool:
        return all(self._idle)


class MultiInputWatermark:
    def __init__(self) -> None:
        self._inputs = {1: MIN_WATERMARK, 2: MIN_WATERMARK}
        self._current = MIN_WATERMARK

    def update(self, input_index: int, ts: int) -> int | None:
        self._inputs[input_index] = max(self._inputs[input_index], ts)
        low = min(self._inputs.values())
        if low > self._current:
            self._current = low
            return low
        return None
