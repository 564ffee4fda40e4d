"""`'connector' = 'nexmark'`: the Nexmark benchmark's generator as a table, with the reference's options.

The table is the reference's `nexmark` table: physical columns `event_type INT` and the rows `person`,
`auction` and `bid` (declare them as `ddl.sql` of nexmark-flink does; computed columns and a watermark may
follow). Options, as the reference's NexmarkSourceOptions: `first-event.rate` (events per second of event
time, overall; `next-event.rate` must equal it: one rate), `events.num` (0: unbounded; else bounded, as
datagen's `number-of-rows`), `person.proportion`/`auction.proportion`/`bid.proportion` (1/3/46),
`person.avg-size`/`auction.avg-size`/`bid.avg-size` (200b/500b/100b), `bid.hot-ratio.auctions` (2),
`bid.hot-ratio.bidders` (4), `auction.hot-ratio.sellers` (4), `max-emit-speed` (true; false paces the events
to their times). fluvial adds `base-time` (epoch milliseconds of the first event; default: when the job is
planned), `out-of-order.group-size` (1: in order), `active-people`/`in-flight-auctions` (1000/100) and
`scan.parallelism`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from fluvial.table.connectors.abilities import FilterPushDownResult
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.errors import ValidationException
from fluvial.table.planner.rex import Call, InputRef, Literal, Rex

__all__ = ["NexmarkFactory"]

_PHYSICAL = ("event_type", "person", "auction", "bid")
_INTS = {
    "first-event.rate": "first_event_rate",
    "events.num": "events_num",
    "person.proportion": "person_proportion",
    "auction.proportion": "auction_proportion",
    "bid.proportion": "bid_proportion",
    "bid.hot-ratio.auctions": "hot_auction_ratio",
    "bid.hot-ratio.bidders": "hot_bidders_ratio",
    "auction.hot-ratio.sellers": "hot_sellers_ratio",
    "out-of-order.group-size": "out_of_order_group_size",
    "active-people": "num_active_people",
    "in-flight-auctions": "num_in_flight_auctions",
    "base-time": "base_time",
}
_SIZES = {"person.avg-size": "person_avg_size", "auction.avg-size": "auction_avg_size", "bid.avg-size": "bid_avg_size"}
_UNITS = {"b": 1, "bytes": 1, "kb": 1024, "k": 1024, "mb": 1024**2, "m": 1024**2}


def _int(key: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValidationException(f"Could not parse value '{text}' for key '{key}': an integer is expected") from None


def _size(key: str, text: str) -> int:
    value = text.strip().lower()
    digits = value.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = value[len(digits) :].strip() or "b"
    if not digits.isdigit() or unit not in _UNITS:
        raise ValidationException(f"Could not parse value '{text}' for key '{key}': a size such as 200b is expected")
    return int(digits) * _UNITS[unit]


def _bool(key: str, text: str) -> bool:
    if text.strip().lower() not in ("true", "false"):
        raise ValidationException(f"Could not parse value '{text}' for key '{key}': true or false is expected")
    return text.strip().lower() == "true"


def nexmark_config(options: dict[str, str]) -> Any:
    """The NexmarkConfig the WITH options describe (validated)."""
    from fluvial.datastream.connectors.nexmark import NexmarkConfig

    check_options(
        "nexmark",
        options,
        set(_INTS) | set(_SIZES) | {"next-event.rate", "max-emit-speed", "scan.parallelism"},
    )
    values: dict[str, Any] = {}
    for key, field in _INTS.items():
        if key in options:
            values[field] = _int(key, options[key])
    for key, field in _SIZES.items():
        if key in options:
            values[field] = _size(key, options[key])
    rate = values.get("first_event_rate", 10_000)
    if "next-event.rate" in options and _int("next-event.rate", options["next-event.rate"]) != rate:
        raise ValidationException(
            "fluvial's Nexmark generator runs at one rate: set 'next-event.rate' equal to 'first-event.rate' "
            f"({rate}) or leave it out"
        )
    if values.get("events_num", 0) < 0:
        raise ValidationException("'events.num' must be 0 (unbounded) or a positive number of events")
    values.setdefault("base_time", int(time.time() * 1000))
    return NexmarkConfig(**values)


def _event_types(rex: Rex) -> frozenset[int] | None:
    """The event types a conjunct `event_type = n` or `event_type IN (n, ...)` lets through; None for others."""
    if isinstance(rex, Call) and rex.function is None and rex.op in ("equals", "in"):
        column, *values = rex.operands
        if rex.op == "equals" and isinstance(values[0], InputRef) and isinstance(column, Literal):
            column, values = values[0], [column]
        if (
            isinstance(column, InputRef)
            and column.index == 0
            and values
            and all(isinstance(v, Literal) and isinstance(v.value, int) for v in values)
        ):
            return frozenset(v.value for v in values)  # type: ignore[union-attr]
    return None


class NexmarkFactory:
    """Takes the WHERE conjuncts on `event_type` (`= n`, `IN (...)`): the events of other types are generated
    (every event's values stay those of the full stream) but not emitted, so nothing after the source sees
    them. Projection is not pushed: the watermark's `dateTime` reads all three rows."""

    def apply_filters(self, context: ConnectorContext, filters: Sequence[Rex]) -> FilterPushDownResult:
        accepted = tuple(f for f in filters if _event_types(f) is not None)
        return FilterPushDownResult(accepted, tuple(f for f in filters if f not in accepted))

    def create_source(self, env: Any, context: ConnectorContext) -> Any:
        from fluvial.datastream.connectors.nexmark import NexmarkSource

        options = context.options
        if tuple(context.names) != _PHYSICAL:
            raise ValidationException(
                f"The 'nexmark' connector produces the columns {', '.join(_PHYSICAL)} (ROWs as in nexmark-flink's "
                f"ddl.sql), but table '{context.table_name}' declares {', '.join(context.names)}"
            )
        config = nexmark_config(options)
        emit = _bool("max-emit-speed", options["max-emit-speed"]) if "max-emit-speed" in options else True
        types: frozenset[int] | None = None
        for f in context.filters:
            allowed = _event_types(f)
            types = allowed if types is None else types & allowed  # type: ignore[operator]
        stream = env.from_source(NexmarkSource(config, emit, types), source_name=context.table_name)
        if "scan.parallelism" in options:
            stream.set_parallelism(_int("scan.parallelism", options["scan.parallelism"]))
        return stream
