"""The bucketing step of a split DISTINCT aggregation (`fluvial.table.planner.distinct_split`): each row with
`MOD(HASH_CODE(x), buckets)` appended. The hash is `stable_hash`, the same in every process and run (Python's
str hash is salted per interpreter: two TaskManagers would put one value in two buckets and count it twice);
NULL is bucket 0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fluvial.common.key_groups import stable_hash
from fluvial.common.row import Row, _create_row
from fluvial.datastream.functions import MapFunction

__all__ = ["DistinctBucketFunction"]


class DistinctBucketFunction(MapFunction):  # type: ignore[misc]
    def __init__(self, names: Sequence[str], column: int, buckets: int) -> None:
        self.names = list(names)
        self.column = column
        self.buckets = buckets

    def map(self, value: Row) -> Row:
        values: list[Any] = value._values
        x = values[self.column]
        bucket = 0 if x is None else stable_hash(x) % self.buckets
        return _create_row(self.names, [*values, bucket], value._row_kind)
