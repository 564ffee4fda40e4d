"""Group windows of the Table API (PyFlink `pyflink.table.window`): `Tumble`, `Slide`, `Session`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.table.expression import Expression, _expr

__all__ = ["Tumble", "Slide", "Session", "GroupWindow"]


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
