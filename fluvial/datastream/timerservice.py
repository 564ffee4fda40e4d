"""TimerService and TimeDomain (PyFlink `pyflink.datastream.timerservice`): what process functions use to read
the clocks and register timers. Timers are per key and deduplicated; they fire on the task's own thread."""

from __future__ import annotations

import abc

from fluvial.datastream.time_domain import TimeDomain

__all__ = ["TimeDomain", "TimerService"]


class TimerService(abc.ABC):
    @abc.abstractmethod
    def current_processing_time(self) -> int: ...

    @abc.abstractmethod
    def current_watermark(self) -> int: ...

    @abc.abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None: ...

    @abc.abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None: ...

    @abc.abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None: ...

    @abc.abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None: ...
