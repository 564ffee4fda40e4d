"""The Nexmark source: `env.from_source(NexmarkSource(NexmarkConfig(...)), strategy, "nexmark")`.

Each subtask runs the generators of its splits (`GeneratorSplit.split(config, parallelism)`: the reference's
parallel timelines), and a split's checkpointed position is its event count and its Random's state, so a
restored job continues with the very next event. Records are Rows of the `nexmark` table: `event_type`
(0 person, 1 auction, 2 bid) and the three nested rows, two of them null. `event_time(row)` is the event's
time in epoch milliseconds, for a TimestampAssigner.

With `max_emit_speed=False` a reader paces itself to the events' times (as many per second of wall clock as
the configured rate); by default it emits as fast as it is polled.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.row import Row
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.nexmark.generator import GeneratorSplit, NexmarkConfig, NexmarkGenerator
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

__all__ = ["NexmarkSource", "NexmarkSplit", "NexmarkReader", "event_time"]

_EPOCH = _dt.datetime(1970, 1, 1)
_MILLISECOND = _dt.timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class NexmarkSplit:
    """A generator and its position: `emitted` events so far and the Random's state (None: fresh)."""

    split_id: str
    generator: GeneratorSplit
    emitted: int = 0
    random_state: Any = None


@dataclass(frozen=True, slots=True)
class NexmarkSource(Source[NexmarkSplit]):
    """Nexmark events; bounded when `config.events_num` > 0."""

    config: NexmarkConfig = NexmarkConfig()
    max_emit_speed: bool = True
    # only these event types are emitted (None: all); the others are still generated, so every event's
    # values are the same as in the full stream (SQL's filter push-down of `event_type = 2`)
    event_types: frozenset[int] | None = None

    def __post_init__(self) -> None:
        c = self.config
        if c.first_event_rate <= 0:
            raise InvalidJobError(f"first-event.rate must be positive, got {c.first_event_rate}")
        if min(c.person_proportion, c.auction_proportion, c.bid_proportion) < 1:
            raise InvalidJobError(
                "person.proportion, auction.proportion and bid.proportion must each be at least 1 (the "
                "generator's ids assume every kind occurs)"
            )
        if min(c.hot_auction_ratio, c.hot_bidders_ratio, c.hot_sellers_ratio, c.out_of_order_group_size) < 1:
            raise InvalidJobError("the hot ratios and the out-of-order group size must be at least 1")

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED if self.config.events_num > 0 else Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[NexmarkSplit]:
        if parallelism < 1:
            raise InvalidJobError(f"cannot split the Nexmark generator for parallelism {parallelism}; use 1 or more")
        return [NexmarkSplit(str(i), g) for i, g in enumerate(GeneratorSplit.split(self.config, parallelism))]

    def create_reader(self, task_info: TaskInfo) -> NexmarkReader:
        return NexmarkReader(self.max_emit_speed, self.event_types)

    def default_name(self) -> str:
        return "Nexmark Source"


class NexmarkReader(SourceReader[NexmarkSplit]):
    """Runs its splits' generators one after another; paced to event time unless `max_emit_speed`."""

    def __init__(self, max_emit_speed: bool = True, event_types: frozenset[int] | None = None) -> None:
        self._event_types = event_types
        self._queue: list[NexmarkSplit] = []
        self._active: NexmarkGenerator | None = None
        self._active_id = ""
        self._max_emit_speed = max_emit_speed
        self._wall_base: float | None = None

    def add_splits(self, splits: list[NexmarkSplit]) -> None:
        self._queue.extend(splits)

    def poll(self, max_records: int) -> Sequence | None:
        generator = self._active
        if generator is None or not generator.has_next():
            generator = self._activate_next()
            if generator is None:
                return None
        if not self._max_emit_speed:
            max_records = self._due(generator, max_records)
            if max_records == 0:
                return []
        rows = generator.next_rows(max_records)
        if self._event_types is not None:
            types = self._event_types
            rows = [row for row in rows if row[0] in types]
        return rows

    def _due(self, generator: NexmarkGenerator, max_records: int) -> int:
        """How many events are due by the wall clock (event time since the first event = wall time since the
        reader's start)."""
        now = time.monotonic()
        if self._wall_base is None:
            self._wall_base = now - (generator.timestamp_for_event(generator.count) - generator._c.base_time) / 1000
        elapsed_ms = (now - self._wall_base) * 1000
        due = 0
        while due < max_records and generator.count + due < generator.split.max_events:
            if generator.timestamp_for_event(generator.count + due) - generator._c.base_time > elapsed_ms:
                break
            due += 1
        return due

    def current_split_id(self) -> Any:
        return self._active_id

    def _activate_next(self) -> NexmarkGenerator | None:
        while self._queue:
            split = self._queue.pop(0)
            generator = NexmarkGenerator(split.generator, split.emitted, split.random_state)
            if generator.has_next():
                self._active, self._active_id = generator, split.split_id
                return generator
        self._active = None
        return None

    def snapshot_state(self) -> list[NexmarkSplit]:
        state = []
        if self._active is not None and self._active.has_next():
            count, random_state = self._active.state()
            state.append(NexmarkSplit(self._active_id, self._active.split, count, random_state))
        state.extend(self._queue)
        return state


def event_time(row: Row) -> int:
    """The event's time in epoch milliseconds (its person's, auction's or bid's `dateTime`)."""
    return (row[row[0] + 1][_DATE_TIME_INDEX[row[0]]] - _EPOCH) // _MILLISECOND


_DATE_TIME_INDEX = (6, 5, 3)
