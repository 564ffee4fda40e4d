"""TimerService and TimeDomain (PyFlink `pyflink.datastream.timerservice`): what process functions use to read
the clocks and register timers. Timers are per key and deduplicated; they fire on the task's own thread."""

from __future__ import annotations

import abc

from fluvial.datastream.time_domain import TimeDomain

__all__ = ["TimeDomain", "TimerService"]


class TimerService(abc.ABC):
    """Time and timers of a process function (PyFlink's `TimerService`): `ctx.timer_service()`. Timers
    are per key (keyed functions only), deduplicated per timestamp, and checkpointed.
    """

    @abc.abstractmethod
    def current_processing_time(self) -> int:
        """The wall clock in ms since the epoch."""

    @abc.abstractmethod
    def current_watermark(self) -> int:
        """The operator's event-time clock: its current input watermark in ms."""

    @abc.abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        """Call `on_timer` for the current key when the wall clock reaches `timestamp`.

        Args:
            timestamp: The time in ms.
        """

    @abc.abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        """Call `on_timer` for the current key when the watermark reaches `timestamp`.

        Args:
            timestamp: The time in ms.
        """

    @abc.abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None:
        """Delete the current key's processing-time timer at `timestamp`, if any.

        Args:
            timestamp: The timer's time.
        """

    @abc.abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None:
        """Delete the current key's event-time timer at `timestamp`, if any.

        Args:
            timestamp: The timer's time.
        """
