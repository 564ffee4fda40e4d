"""The Nexmark event generator (the benchmark's Person/Auction/Bid stream), as the reference generator makes it.

The reference is `nexmark/nexmark`'s `NexmarkGenerator` (after Apache Beam's): events are numbered; event
number n gets the event id `first_event_id + adjusted(n)` and the event time `base_time + n * delay`, where
`delay` is 1/`first-event.rate` of a second times the number of parallel generators (each generator runs its
own timeline at its share of the overall rate). The event id decides the kind, in the proportions
`person:auction:bid` (1:3:46 by default): the id modulo their sum, persons first, then auctions, then bids.
Ids follow from the event id alone (person and auction ids start at 1000, categories at 10); a bid is for a
"hot" auction (the first of the last hundred) with probability 1 - 1/`bid.hot-ratio.auctions`, else for a
random auction among the last `num_in_flight_auctions` plus a few not yet made; bidders and sellers likewise
(hot bidders are the second of the last hundred persons, hot sellers the first). Prices are 10^(6u) * 100
cents; an auction expires at a random time averaging the time until `num_in_flight_auctions` further auctions
exist. `out_of_order_group_size` > 1 shuffles event ids (and so times) inside groups of that many events.

Random choices come from one `random.Random` per generator, seeded from its first event id: a generator is
deterministic, and its position (events emitted and the Random's state) is what a checkpoint records. The
reference seeds nothing; its values are random per run, with the same distributions.
"""

from __future__ import annotations

import datetime as _dt
import random
from dataclasses import dataclass
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row

__all__ = [
    "NexmarkConfig",
    "NexmarkGenerator",
    "EVENT_FIELDS",
    "PERSON_FIELDS",
    "AUCTION_FIELDS",
    "BID_FIELDS",
    "PERSON",
    "AUCTION",
    "BID",
]

PERSON, AUCTION, BID = 0, 1, 2
EVENT_FIELDS = ("event_type", "person", "auction", "bid")
PERSON_FIELDS = ("id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra")
AUCTION_FIELDS = (
    "id",
    "itemName",
    "description",
    "initialBid",
    "reserve",
    "dateTime",
    "expires",
    "seller",
    "category",
    "extra",
)
BID_FIELDS = ("auction", "bidder", "price", "dateTime", "extra")

FIRST_AUCTION_ID = 1000
FIRST_PERSON_ID = 1000
FIRST_CATEGORY_ID = 10
_PERSON_ID_LEAD = 10
_AUCTION_ID_LEAD = 10
_HOT_RATIO = 100  # hot sellers/bidders/auctions: the first (sellers, auctions) or second (bidders) of 100
_NUM_CATEGORIES = 5
_MIN_STRING_LENGTH = 3
_US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
_US_CITIES = (
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
)
_FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
_LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")
_EPOCH = _dt.datetime(1970, 1, 1)
_MAX_EVENTS = 2**62


@dataclass(frozen=True, slots=True)
class NexmarkConfig:
    """The reference's NexmarkConfiguration, the fields the generator reads (names as in its table options)."""

    first_event_rate: int = 10_000  # overall events per second of event time
    events_num: int = 0  # 0: unbounded
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    person_avg_size: int = 200
    auction_avg_size: int = 500
    bid_avg_size: int = 100
    hot_auction_ratio: int = 2
    hot_bidders_ratio: int = 4
    hot_sellers_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    out_of_order_group_size: int = 1
    base_time: int = 0  # ms since the epoch of event number 0

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    @property
    def max_events(self) -> int:
        return self.events_num if self.events_num > 0 else _MAX_EVENTS


@dataclass(frozen=True, slots=True)
class GeneratorSplit:
    """One generator of `generators`: the event ids `first_event_id ..+max_events`, on its own timeline."""

    config: NexmarkConfig
    first_event_id: int
    max_events: int
    generators: int

    @staticmethod
    def split(config: NexmarkConfig, n: int) -> list[GeneratorSplit]:
        """The reference's `GeneratorConfig.split`: near-equal event counts, disjoint id ranges, the last takes
        the remainder."""
        total = config.max_events
        sub = total // n
        splits, first = [], 0
        for i in range(n):
            count = total - sub * (n - 1) if i == n - 1 else sub
            splits.append(GeneratorSplit(config, first, count, n))
            first += count
        return splits


class NexmarkGenerator:
    """Events of one GeneratorSplit, in order, as Rows of the `nexmark` table (`EVENT_FIELDS`)."""

    __slots__ = ("split", "count", "random", "_delay_us", "_c")

    def __init__(self, split: GeneratorSplit, count: int = 0, random_state: Any = None) -> None:
        self.split = split
        self.count = count
        self.random = random.Random(split.first_event_id * 7919 + 17)
        if random_state is not None:
            self.random.setstate(random_state)
        self._c = split.config
        self._delay_us = 1_000_000.0 / self._c.first_event_rate * split.generators

    def has_next(self) -> bool:
        return self.count < self.split.max_events

    def state(self) -> tuple[int, Any]:
        """The position: events emitted, and the Random's state (what a restored generator continues from)."""
        return self.count, self.random.getstate()

    # -- time and ids (the reference's GeneratorConfig) -----------------------------------------------------------

    def timestamp_for_event(self, event_number: int) -> int:
        return self._c.base_time + int(event_number * self._delay_us) // 1000

    def _adjusted(self, event_number: int) -> int:
        n = self._c.out_of_order_group_size
        if n <= 1:
            return event_number
        return (event_number // n) * n + (event_number * 953) % n

    def watermark_event_time(self) -> int:
        """The smallest event time this generator can still produce (out-of-order groups included)."""
        n = max(self._c.out_of_order_group_size, 1)
        return self.timestamp_for_event((self.count // n) * n)

    def next_rows(self, max_records: int) -> list[Row]:
        stop = min(self.count + max_records, self.split.max_events)
        rows = [self._next() for _ in range(self.count, stop)]
        return rows

    def _next(self) -> Row:
        c = self._c
        number = self.count
        adjusted = self._adjusted(number)
        event_id = self.split.first_event_id + adjusted
        timestamp = self.timestamp_for_event(adjusted)
        rem = event_id % c.total_proportion
        if rem < c.person_proportion:
            row = _create_row(EVENT_FIELDS, (PERSON, self._person(event_id, timestamp), None, None), RowKind.INSERT)
        elif rem < c.person_proportion + c.auction_proportion:
            row = _create_row(
                EVENT_FIELDS, (AUCTION, None, self._auction(number, event_id, timestamp), None), RowKind.INSERT
            )
        else:
            row = _create_row(EVENT_FIELDS, (BID, None, None, self._bid(event_id, timestamp)), RowKind.INSERT)
        self.count = number + 1
        return row

    # -- persons ------------------------------------------------------------------------------------------------

    def _last_base0_person_id(self, event_id: int) -> int:
        c = self._c
        epoch, offset = divmod(event_id, c.total_proportion)
        if offset >= c.person_proportion:
            offset = c.person_proportion - 1
        return epoch * c.person_proportion + offset

    def _next_base0_person_id(self, event_id: int) -> int:
        num_people = self._last_base0_person_id(event_id) + 1
        active = min(num_people, self._c.num_active_people)
        return num_people - active + self.random.randrange(active + _PERSON_ID_LEAD)

    def _person(self, event_id: int, timestamp: int) -> Row:
        r = self.random
        name = f"{r.choice(_FIRST_NAMES)} {r.choice(_LAST_NAMES)}"
        email = f"{self._string(7)}@{self._string(5)}.com"
        card = " ".join(f"{r.randrange(10000):04d}" for _ in range(4))
        city, state = r.choice(_US_CITIES), r.choice(_US_STATES)
        size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
        values = (
            self._last_base0_person_id(event_id) + FIRST_PERSON_ID,
            name,
            email,
            card,
            city,
            state,
            _time(timestamp),
            self._extra(size, self._c.person_avg_size),
        )
        return _create_row(PERSON_FIELDS, values)

    # -- auctions -----------------------------------------------------------------------------------------------

    def _last_base0_auction_id(self, event_id: int) -> int:
        c = self._c
        epoch, offset = divmod(event_id, c.total_proportion)
        if offset < c.person_proportion:
            epoch -= 1
            offset = c.auction_proportion - 1
        elif offset >= c.person_proportion + c.auction_proportion:
            offset = c.auction_proportion - 1
        else:
            offset -= c.person_proportion
        return epoch * c.auction_proportion + offset

    def _next_base0_auction_id(self, event_id: int) -> int:
        last = self._last_base0_auction_id(event_id)
        low = max(last - self._c.num_in_flight_auctions, 0)
        return low + self.random.randrange(last - low + 1 + _AUCTION_ID_LEAD)

    def _auction(self, number: int, event_id: int, timestamp: int) -> Row:
        c, r = self._c, self.random
        if r.randrange(c.hot_sellers_ratio) > 0:
            seller = (self._last_base0_person_id(event_id) // _HOT_RATIO) * _HOT_RATIO
        else:
            seller = self._next_base0_person_id(event_id)
        category = FIRST_CATEGORY_ID + r.randrange(_NUM_CATEGORIES)
        initial_bid = self._price()
        # the auction's length averages the time until num_in_flight_auctions more auctions exist
        events_ahead = (c.num_in_flight_auctions * c.total_proportion) // c.auction_proportion
        horizon = self.timestamp_for_event(self._adjusted(number) + events_ahead) - timestamp
        expires = timestamp + 1 + r.randrange(max(horizon * 2, 1))
        name, description = self._string(20), self._string(100)
        reserve = initial_bid + self._price()
        size = 8 + len(name) + len(description) + 40
        values = (
            self._last_base0_auction_id(event_id) + FIRST_AUCTION_ID,
            name,
            description,
            initial_bid,
            reserve,
            _time(timestamp),
            _time(expires),
            seller + FIRST_PERSON_ID,
            category,
            self._extra(size, c.auction_avg_size),
        )
        return _create_row(AUCTION_FIELDS, values)

    # -- bids ---------------------------------------------------------------------------------------------------

    def _bid(self, event_id: int, timestamp: int) -> Row:
        c, r = self._c, self.random
        if r.randrange(c.hot_auction_ratio) > 0:
            auction = (self._last_base0_auction_id(event_id) // _HOT_RATIO) * _HOT_RATIO
        else:
            auction = self._next_base0_auction_id(event_id)
        if r.randrange(c.hot_bidders_ratio) > 0:
            bidder = (self._last_base0_person_id(event_id) // _HOT_RATIO) * _HOT_RATIO + 1
        else:
            bidder = self._next_base0_person_id(event_id)
        values = (
            auction + FIRST_AUCTION_ID,
            bidder + FIRST_PERSON_ID,
            self._price(),
            _time(timestamp),
            self._extra(32, c.bid_avg_size),
        )
        return _create_row(BID_FIELDS, values)

    # -- values -------------------------------------------------------------------------------------------------

    def _price(self) -> int:
        return round(10.0 ** (self.random.random() * 6.0) * 100.0)

    def _string(self, max_length: int) -> str:
        """Up to `max_length` - 1 letters with about one space in 13, trimmed (the reference's nextString)."""
        r = self.random
        length = _MIN_STRING_LENGTH + r.randrange(max_length - _MIN_STRING_LENGTH)
        return r.randbytes(length).translate(_STRING_BYTES).decode("ascii").strip()

    def _extra(self, current_size: int, average_size: int) -> str:
        """Letters making the event's size `average_size` on average (±20%), as the reference's nextExtra."""
        if current_size > average_size:
            return ""
        wanted = average_size - current_size
        delta = round(wanted * 0.2)
        size = wanted - delta + (self.random.randrange(2 * delta) if delta else 0)
        return self.random.randbytes(size).translate(_LETTER_BYTES).decode("ascii")


# random bytes to text at C speed: a byte is a letter (byte mod 26; 256 = 9 * 26 + 22 leaves a-v a little more
# likely, as the reference's `nextInt() % 26` is skewed too) or, for nextString, a space for 20 of the 256 values
_LETTER_BYTES = bytes(ord("a") + b % 26 for b in range(256))
_STRING_BYTES = bytes(ord(" ") if b < 20 else ord("a") + b % 26 for b in range(256))


def _time(millis: int) -> _dt.datetime:
    """Event time as TIMESTAMP(3): a naive datetime read as UTC, as fluvial's SQL values are."""
    return _EPOCH + _dt.timedelta(milliseconds=millis)
