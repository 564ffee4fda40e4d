"""A task's event-time clock over its input channels (DESIGN 2.4, seed 003; Flink's StatusWatermarkValve).

Every upstream subtask broadcasts its watermarks to every downstream subtask, so a task receiving from N
channels holds N watermarks. Its clock is the smallest of them — the slowest channel decides, since a faster
channel's promise says nothing about records still coming on the slow one — and it forwards a watermark only
when that minimum advances.

The rules, with the seed's example (channels at 2, 4, 3, 6 → clock 2; the channel at 2 moves to 4 → clock 3;
the channel at 4 moves to 7 → clock still 3, nothing sent; the channel at 3 moves to 6 → clock 4):

1. A channel's watermark never goes back: a watermark not above the channel's last one is ignored.
2. Until every active channel has reported, the minimum is the minimum watermark, so nothing is emitted.
3. An idle channel leaves the minimum; that may advance the clock. Watermarks arriving on an idle channel
   are ignored (as in Flink, an upstream announces ACTIVE before it sends watermarks again).
4. A channel that turns active with a watermark below the clock is *unaligned*: it does not hold the clock
   back (the clock never goes back) until its watermark catches up with the clock; then it counts again.
5. When the last active channel goes idle, the valve goes idle, and if that channel was the one holding the
   clock, the highest watermark of any channel is flushed: nobody is left to hold it back.
"""

from __future__ import annotations

from typing import NamedTuple

from fluvial.common.time import MIN_WATERMARK
from fluvial.runtime.records import WatermarkStatus


class ValveOutput(NamedTuple):
    """What one status input produced, in the order to send it downstream: the watermark first, then the
    status (so the flushed watermark of a valve going idle precedes its IDLE)."""

    watermark: int | None
    status: WatermarkStatus | None


class _ChannelStatus:
    __slots__ = ("active", "aligned", "watermark")

    def __init__(self) -> None:
        self.watermark = MIN_WATERMARK
        self.active = True
        self.aligned = True  # counted in the minimum: active and caught up with the clock


class WatermarkValve:
    """Combines the watermarks and idleness of `num_channels` input channels into one clock.

    Owned by one task thread; not thread safe. Every method returning `int | None` returns the new clock when
    the call advanced it (send `Watermark(result)` downstream), else None.
    """

    __slots__ = ("_channels", "_idle", "_last_output")

    def __init__(self, num_channels: int) -> None:
        if num_channels < 1:
            raise ValueError(f"a WatermarkValve needs at least one input channel, got {num_channels}")
        self._channels = [_ChannelStatus() for _ in range(num_channels)]
        self._last_output = MIN_WATERMARK
        self._idle = False

    @property
    def num_channels(self) -> int:
        return len(self._channels)

    @property
    def current_watermark(self) -> int:
        """The last watermark emitted (MIN_WATERMARK before the first)."""
        return self._last_output

    def is_idle(self) -> bool:
        """True while every channel is idle (the task then announces IDLE downstream)."""
        return self._idle

    def input_watermark(self, channel: int, timestamp: int) -> int | None:
        status = self._channel(channel)
        if not status.active or timestamp <= status.watermark:
            return None  # rules 3 and 1
        status.watermark = timestamp
        if not status.aligned and timestamp >= self._last_output:
            status.aligned = True  # rule 4: caught up
        return self._advance_to_aligned_minimum()

    def mark_idle(self, channel: int) -> int | None:
        """The channel stops holding the clock back. Check `is_idle()` afterwards for the task's status."""
        status = self._channel(channel)
        if not status.active:
            return None
        status.active = False
        status.aligned = False
        held_the_clock = status.watermark == self._last_output
        if not any(other.active for other in self._channels):
            self._idle = True
            return self._flush_maximum() if held_the_clock else None  # rule 5
        return self._advance_to_aligned_minimum() if held_the_clock else None

    def mark_active(self, channel: int) -> None:
        """The channel holds the clock back again, once its watermark is at least the clock (rule 4).

        Never advances the clock: rejoining can only add a channel to the minimum.
        """
        status = self._channel(channel)
        if status.active:
            return
        status.active = True
        status.aligned = status.watermark >= self._last_output
        self._idle = False

    def input_watermark_status(self, channel: int, status: WatermarkStatus | bool) -> ValveOutput:
        """Feed a channel's WatermarkStatus (or `idle: bool`): the watermark the change released, if any, and
        the task's new status when it changed (IDLE when every channel is idle, ACTIVE when one returns)."""
        idle = status.idle if isinstance(status, WatermarkStatus) else bool(status)
        was_idle = self._idle
        watermark = None
        if idle:
            watermark = self.mark_idle(channel)
        else:
            self.mark_active(channel)
        changed = WatermarkStatus(idle=self._idle) if self._idle != was_idle else None
        return ValveOutput(watermark, changed)

    def _channel(self, channel: int) -> _ChannelStatus:
        if not 0 <= channel < len(self._channels):
            raise IndexError(
                f"input channel {channel} does not exist: this valve has channels 0..{len(self._channels) - 1}"
            )
        return self._channels[channel]

    def _advance_to_aligned_minimum(self) -> int | None:
        aligned = [status.watermark for status in self._channels if status.aligned]
        if aligned:
            minimum = min(aligned)
            if minimum > self._last_output:
                self._last_output = minimum
                return minimum
        return None

    def _flush_maximum(self) -> int | None:
        maximum = max(status.watermark for status in self._channels)
        if maximum > self._last_output:
            self._last_output = maximum
            return maximum
        return None


class MultiInputWatermark:
    """The clock of a two-input operator (or any N logical inputs), each input already combined by its own
    valve (Flink's IndexedCombinedWatermarkStatus).

    The clock is the minimum over inputs that are not idle, and only ever advances. A watermark on an idle
    input makes it active again. Unlike the valve there is no alignment: an input returning below the clock
    holds further progress back until it catches up (the clock itself never goes back).
    """

    __slots__ = ("_combined", "_idle", "_watermarks")

    def __init__(self, num_inputs: int = 2) -> None:
        if num_inputs < 1:
            raise ValueError(f"a MultiInputWatermark needs at least one input, got {num_inputs}")
        self._watermarks = [MIN_WATERMARK] * num_inputs
        self._idle = [False] * num_inputs
        self._combined = MIN_WATERMARK

    @property
    def current_watermark(self) -> int:
        return self._combined

    def is_idle(self) -> bool:
        """True while every input is idle."""
        return all(self._idle)

    def update(self, input_index: int, timestamp: int) -> int | None:
        """A new watermark on one input (0 for the first); returns the combined watermark if it advanced."""
        self._check(input_index)
        self._idle[input_index] = False
        self._watermarks[input_index] = max(self._watermarks[input_index], timestamp)
        return self._advance()

    def mark_idle(self, input_index: int) -> int | None:
        self._check(input_index)
        self._idle[input_index] = True
        return self._advance()

    def mark_active(self, input_index: int) -> int | None:
        """May advance the clock: when every input was idle, the returning input alone decides."""
        self._check(input_index)
        self._idle[input_index] = False
        return self._advance()

    def _check(self, input_index: int) -> None:
        if not 0 <= input_index < len(self._watermarks):
            raise IndexError(f"input {input_index} does not exist: inputs are 0..{len(self._watermarks) - 1}")

    def _advance(self) -> int | None:
        active = [wm for wm, idle in zip(self._watermarks, self._idle) if not idle]
        if active:
            minimum = min(active)
            if minimum > self._combined:
                self._combined = minimum
                return minimum
        return None


__all__ = ["MultiInputWatermark", "ValveOutput", "WatermarkValve"]
