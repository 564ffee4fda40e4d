"""Windows of the Table API (PyFlink `pyflink.table.window`): the group windows `Tumble`, `Slide`, `Session`,
and `Over` windows (`Over.partition_by(...).order_by(...).preceding(...).alias("w")`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.table.expression import Expression, _expr

__all__ = ["Tumble", "Slide", "Session", "Over", "GroupWindow", "OverWindow"]


def _millis(e: Any, what: str) -> int:
    e = _expr(e)
    if e.kind != "literal" or e.data_type is None or e.data_type.name != "INTERVAL_DAY_TIME":
        raise TypeError(f"{what} takes a time interval such as lit(5).seconds, got {e.to_string()}")
    return int(e.value)


@dataclass(frozen=True)
class GroupWindow:
    kind: str
    size: int
    slide: int = 0
    time_field: Expression | None = None
    alias_name: str | None = None

    def on(self, time_field: Any) -> GroupWindow:
        return GroupWindow(self.kind, self.size, self.slide, _expr(time_field), self.alias_name)

    def alias(self, alias: str) -> GroupWindow:
        return GroupWindow(self.kind, self.size, self.slide, self.time_field, alias)


class _Tumble:
    def over(self, size: Any) -> GroupWindow:
        return GroupWindow("TUMBLE", _millis(size, "Tumble.over"))


class _SlideSize:
    def __init__(self, size: int) -> None:
        self.size = size

    def every(self, slide: Any) -> GroupWindow:
        return GroupWindow("HOP", self.size, _millis(slide, "Slide.every"))


class _Slide:
    def over(self, size: Any) -> _SlideSize:
        return _SlideSize(_millis(size, "Slide.over"))


class _Session:
    def with_gap(self, gap: Any) -> GroupWindow:
        return GroupWindow("SESSION", _millis(gap, "Session.with_gap"))


Tumble = _Tumble()
Slide = _Slide()
Session = _Session()


@dataclass(frozen=True)
class OverWindow:
    """An over window: PARTITION BY `partition_by` ORDER BY `order_by`, the frame from `preceding` to
    `following` (UNBOUNDED_RANGE and CURRENT_RANGE unless set), named `alias_name`."""

    partition_by: tuple[Expression, ...] = ()
    order_by: Expression | None = None
    preceding_bound: Expression | None = None
    following_bound: Expression | None = None
    alias_name: str | None = None

    def preceding(self, preceding: Any) -> OverWindow:
        return OverWindow(self.partition_by, self.order_by, _expr(preceding), self.following_bound, self.alias_name)

    def following(self, following: Any) -> OverWindow:
        return OverWindow(self.partition_by, self.order_by, self.preceding_bound, _expr(following), self.alias_name)

    def alias(self, alias: str) -> OverWindow:
        return OverWindow(self.partition_by, self.order_by, self.preceding_bound, self.following_bound, alias)


class _OverPartitioned:
    def __init__(self, partition_by: tuple[Expression, ...]) -> None:
        self._partition_by = partition_by

    def order_by(self, order_by: Any) -> OverWindow:
        return OverWindow(self._partition_by, _expr(order_by))


class _Over:
    def partition_by(self, *partition_by: Any) -> _OverPartitioned:
        return _OverPartitioned(tuple(_expr(p) for p in partition_by))

    def order_by(self, order_by: Any) -> OverWindow:
        return OverWindow((), _expr(order_by))


Over = _Over()
