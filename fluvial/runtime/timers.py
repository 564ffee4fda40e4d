"""Timers: per-key, per-namespace, deduplicated, fired in timestamp order on the task's thread.

InternalTimerService holds an operator's event-time and processing-time timers. Event-time timers fire when
`advance_watermark` passes them; processing-time timers fire when the task's ProcessingTimeService calls back
(the executor thread that owns the task). Before each firing the key becomes the backend's current key, so
the callback sees that key's state. The queues are heaps with lazy deletion: a deleted timer stays in the heap
but not in the live set, and is skipped when it surfaces.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fluvial.common.errors import StateError
from fluvial.common.time import MAX_WATERMARK, MIN_WATERMARK
from fluvial.datastream.timerservice import TimeDomain, TimerService


@dataclass(frozen=True, slots=True, order=True)
class Timer:
    timestamp: int
    key: Any
    namespace: Any = None


class Triggerable(Protocol):
    def on_event_time(self, timer: Timer) -> None: ...

    def on_processing_time(self, timer: Timer) -> None: ...


class ProcessingTimeService(Protocol):
    """The task's wall clock and its one-shot callbacks (implemented by the executor)."""

    def current_processing_time(self) -> int: ...

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> Any: ...


class _TimerQueue:
    """A heap of (timestamp, seq, timer) with a live set for deduplication and lazy deletion."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Timer]] = []
        self._live: set[Timer] = set()
        self._seq = itertools.count()

    def add(self, timer: Timer) -> bool:
        if timer in self._live:
            return False
        self._live.add(timer)
        heapq.heappush(self._heap, (timer.timestamp, next(self._seq), timer))
        return True

    def remove(self, timer: Timer) -> None:
        self._live.discard(timer)

    def peek_timestamp(self) -> int | None:
        heap = self._heap
        while heap and heap[0][2] not in self._live:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def pop_due(self, up_to: int) -> Timer | None:
        heap = self._heap
        while heap:
            timestamp, _, timer = heap[0]
            if timer not in self._live:
                heapq.heappop(heap)
                continue
            if timestamp > up_to:
                return None
            heapq.heappop(heap)
            self._live.discard(timer)
            return timer
        return None

    def __len__(self) -> int:
        return len(self._live)

    def timers(self) -> list[Timer]:
        """The live timers in firing order: by (timestamp, registration), never by key or namespace, which
        need not be orderable (None beside str keys, a user's unordered dataclass)."""
        live, seen, out = self._live, set(), []
        for _, _, timer in sorted(self._heap, key=lambda entry: (entry[0], entry[1])):
            if timer in live and timer not in seen:  # a deleted then re-added timer has two entries
                seen.add(timer)
                out.append(timer)
        return out


class InternalTimerService:
    """`end_of_input_only` (BATCH execution mode): processing time does not advance while input flows (the clock
    is read once, at the first ask, and reads the same until the end of input, so a timer registered at `now + d`
    by several records of a key is one timer, as Flink's batch semantics promise whatever the wall clock did
    meanwhile), so no processing-time timer fires then; the final watermark fires every event-time timer and then every
    processing-time timer, and from then on the processing-time clock reads the end of time (a timer registered
    relative to it never fires, so an `on_timer` that re-registers itself cannot loop forever)."""

    def __init__(
        self,
        backend: Any,
        triggerable: Triggerable,
        processing_time: ProcessingTimeService,
        end_of_input_only: bool = False,
    ) -> None:
        self._backend = backend
        self._triggerable = triggerable
        self._processing_time = processing_time
        self._event_timers = _TimerQueue()
        self._processing_timers = _TimerQueue()
        self._scheduled_wakeup: int | None = None
        self.current_watermark = MIN_WATERMARK
        self._end_of_input_only = end_of_input_only
        self._input_ended = False
        self._frozen_processing_time: int | None = None

    # -- registration (for the backend's current key) -----------------------------------------------------------

    def _timer(self, timestamp: int, namespace: Any) -> Timer:
        if not isinstance(timestamp, int) or isinstance(timestamp, bool):
            raise StateError(f"a timer timestamp must be an int of milliseconds, got {timestamp!r}")
        return Timer(timestamp, self._backend.current_key, namespace)

    def register_event_time_timer(self, timestamp: int, namespace: Any = None) -> None:
        self._event_timers.add(self._timer(timestamp, namespace))

    def delete_event_time_timer(self, timestamp: int, namespace: Any = None) -> None:
        self._event_timers.remove(self._timer(timestamp, namespace))

    def register_processing_time_timer(self, timestamp: int, namespace: Any = None) -> None:
        if self._processing_timers.add(self._timer(timestamp, namespace)) and not self._end_of_input_only:
            self._schedule_wakeup()

    def delete_processing_time_timer(self, timestamp: int, namespace: Any = None) -> None:
        self._processing_timers.remove(self._timer(timestamp, namespace))

    def current_processing_time(self) -> int:
        if self._end_of_input_only:
            if self._input_ended:
                return MAX_WATERMARK
            if self._frozen_processing_time is None:
                self._frozen_processing_time = self._processing_time.current_processing_time()
            return self._frozen_processing_time
        return self._processing_time.current_processing_time()

    # -- firing -------------------------------------------------------------------------------------------------

    def advance_watermark(self, watermark: int) -> None:
        """Fire every event-time timer with timestamp <= watermark, in timestamp order (in BATCH mode, the final
        watermark then fires the processing-time timers too)."""
        self.current_watermark = watermark
        backend, fire = self._backend, self._triggerable.on_event_time
        while (timer := self._event_timers.pop_due(watermark)) is not None:
            backend.current_key = timer.key
            fire(timer)
        if self._end_of_input_only and watermark >= MAX_WATERMARK and not self._input_ended:
            self._input_ended = True
            self._on_processing_time(MAX_WATERMARK)

    def _schedule_wakeup(self) -> None:
        earliest = self._processing_timers.peek_timestamp()
        if earliest is None:
            return
        if self._scheduled_wakeup is None or earliest < self._scheduled_wakeup:
            self._scheduled_wakeup = earliest
            self._processing_time.register_timer(earliest, self._on_processing_time)

    def _on_processing_time(self, now: int) -> None:
        if self._scheduled_wakeup is not None and self._scheduled_wakeup <= now:
            self._scheduled_wakeup = None
        backend, fire = self._backend, self._triggerable.on_processing_time
        while (timer := self._processing_timers.pop_due(now)) is not None:
            backend.current_key = timer.key
            fire(timer)
        if not self._end_of_input_only:
            self._schedule_wakeup()

    def event_timer_count(self) -> int:
        return len(self._event_timers)

    def processing_timer_count(self) -> int:
        return len(self._processing_timers)

    def snapshot(self) -> dict[str, list[Timer]]:
        return {"event": self._event_timers.timers(), "processing": self._processing_timers.timers()}

    def restore(self, snapshot: dict[str, list[Timer]]) -> None:
        for timer in snapshot.get("event", []):
            self._event_timers.add(timer)
        for timer in snapshot.get("processing", []):
            self._processing_timers.add(timer)
        self._schedule_wakeup()

    def snapshot_by_key_group(self, max_parallelism: int) -> dict[int, dict[str, list[Timer]]]:
        """Timers partitioned like keyed state, so a rescaled restore takes the timers of its key groups."""
        from fluvial.common.key_groups import assign_to_key_group

        groups: dict[int, dict[str, list[Timer]]] = {}
        for domain, queue in (("event", self._event_timers), ("processing", self._processing_timers)):
            for timer in queue.timers():
                group = groups.setdefault(assign_to_key_group(timer.key, max_parallelism), {})
                group.setdefault(domain, []).append(timer)
        return groups

    def restore_key_groups(self, groups: dict[int, dict[str, list[Timer]]], key_groups: range) -> None:
        for key_group, timers in groups.items():
            if key_group in key_groups:
                self.restore(timers)


class KeyedTimerService(TimerService):
    """The user-facing TimerService of a keyed function: timers in the default namespace of the current key."""

    def __init__(self, internal: InternalTimerService) -> None:
        self._internal = internal

    def current_processing_time(self) -> int:
        return self._internal.current_processing_time()

    def current_watermark(self) -> int:
        return self._internal.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._internal.register_processing_time_timer(timestamp)

    def register_event_time_timer(self, timestamp: int) -> None:
        self._internal.register_event_time_timer(timestamp)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._internal.delete_processing_time_timer(timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._internal.delete_event_time_timer(timestamp)


class NonKeyedTimerService(TimerService):
    """Clocks only: Flink allows timers on keyed streams alone, and so do we, with an error that says so."""

    def __init__(self, processing_time: ProcessingTimeService, watermark: Callable[[], int], name: str) -> None:
        self._processing_time = processing_time
        self._watermark = watermark
        self._name = name

    def current_processing_time(self) -> int:
        return self._processing_time.current_processing_time()

    def current_watermark(self) -> int:
        return self._watermark()

    def _refuse(self, timestamp: int) -> None:
        raise StateError(
            f"'{self._name}' registered a timer outside a keyed context: timers exist per key; "
            "apply key_by(...) and use a KeyedProcessFunction"
        )

    register_processing_time_timer = _refuse
    register_event_time_timer = _refuse
    delete_processing_time_timer = _refuse
    delete_event_time_timer = _refuse


TIME_DOMAINS = {True: TimeDomain.EVENT_TIME, False: TimeDomain.PROCESSING_TIME}
