"""Windows by a row's rowtime column rather than its record timestamp, for a window aggregation after a join.

A source's rows carry their rowtime as the record timestamp, which DataStream windows read. A join's output
rows carry the timestamp of whichever input row made them, while the window may be over the other side's
rowtime (or a row padded at expiry); Flink's window operators read the row's rowtime column, and so does this
assigner. The planner uses it only after a join, keeping the window operator's fast paths everywhere else.
"""

from __future__ import annotations

from typing import Any

from fluvial.datastream.window_assigners import WindowAssigner
from fluvial.table.values import epoch_millis

__all__ = ["RowtimeWindowAssigner"]


class RowtimeWindowAssigner(WindowAssigner):
    def __init__(self, inner: WindowAssigner, time_index: int) -> None:
        self.inner = inner
        self.time_index = time_index

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> list:
        stamp = element._values[self.time_index]
        return self.inner.assign_windows(element, None if stamp is None else epoch_millis(stamp), context)

    def get_default_trigger(self, env: Any = None) -> Any:
        return self.inner.get_default_trigger(env)

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"RowtimeWindowAssigner({self.inner!r}, time_index={self.time_index})"
