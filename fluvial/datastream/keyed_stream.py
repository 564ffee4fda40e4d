"""KeyedStream (PyFlink's): a stream hash-partitioned by key; operators on it see keyed state per record.

`sum`, `min`, `max`, `min_by` and `max_by` are composites: each compiles to the one keyed running-reduce
primitive with a field aggregator, as Flink's aggregations do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import transformations as t
from fluvial.datastream.data_stream import DataStream, check_function

if TYPE_CHECKING:
    from fluvial.datastream.stream_execution_environment import StreamExecutionEnvironment
    from fluvial.datastream.windowed_stream import WindowedStream


class KeyedStream(DataStream):
    """A DataStream partitioned by key (PyFlink's `KeyedStream`), made by `DataStream.key_by`.

    The operators applied to it see keyed state and timers scoped to the current record's key. A KeyedStream
    is a partitioning, not an operator: settings of operators (parallelism, name, uid, ...) belong to the
    operator after it, and repartitioning it is refused.
    """

    def __init__(
        self, env: StreamExecutionEnvironment, transformation_id: int, key_selector: Any, origin: DataStream
    ) -> None:
        super().__init__(env, transformation_id)
        self._key_selector = key_selector
        self._origin = origin

    def _key(self) -> Any:
        return self._key_selector

    def get_key_selector(self) -> Any:
        """The key selector this stream was keyed by."""
        return self._key_selector

    # -- what PyFlink refuses on a KeyedStream: it is a partitioning, not an operator -------------------------

    def _refuse(self, what: str) -> Any:
        """Refused: a KeyedStream is a partitioning, not an operator.

        Raises:
            InvalidJobError: always; apply the setting to the operator after `key_by`.
        """
        raise InvalidJobError(
            f"{what} for KeyedStream is not supported: a KeyedStream is a partitioning, not an operator; "
            "apply it to the operator after key_by"
        )

    def _refuse_partitioning(self, *args: Any) -> Any:
        """Refused: `key_by` already decides where each record goes.

        Raises:
            InvalidJobError: always; repartition before `key_by`, or after the keyed operator.
        """
        raise InvalidJobError(
            "Cannot override partitioning for KeyedStream: key_by already decides where each record goes; "
            "repartition before key_by, or after the keyed operator"
        )

    shuffle = rescale = rebalance = forward = global_ = broadcast = partition_custom = _refuse_partitioning

    def set_parallelism(self, parallelism: int):
        """Refused: a KeyedStream is a partitioning, not an operator; call `set_parallelism` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set parallelism")

    def set_max_parallelism(self, max_parallelism: int):
        """Refused: a KeyedStream is a partitioning, not an operator; call `set_max_parallelism` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set max parallelism")

    def force_non_parallel(self):
        """Refused: a KeyedStream is a partitioning, not an operator; call `force_non_parallel` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set force non-parallel")

    def name(self, name: str):
        """Refused: a KeyedStream is a partitioning, not an operator; call `name` on the operator after `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set name")

    def get_name(self) -> str:
        """Refused: a KeyedStream is a partitioning, not an operator; call `get_name` on the operator after `key_by`.

        Raises:
            InvalidJobError: always.
        """
        return self._refuse("Get name")

    def uid(self, uid: str):
        """Refused: a KeyedStream is a partitioning, not an operator; call `uid` on the operator after `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set uid")

    def set_uid_hash(self, uid_hash: str):
        """Refused: a KeyedStream is a partitioning, not an operator; call `set_uid_hash` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set uid hash")

    def set_description(self, description: str):
        """Refused: a KeyedStream is a partitioning, not an operator; call `set_description` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set description")

    def set_buffer_timeout(self, timeout_millis: int):
        """Refused: a KeyedStream is a partitioning, not an operator; call `set_buffer_timeout` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Set buffer timeout")

    def slot_sharing_group(self, slot_sharing_group: Any):
        """Refused: a KeyedStream is a partitioning, not an operator; call `slot_sharing_group` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Setting slot sharing group")

    def co_location_group(self, key: str):
        """Refused: a KeyedStream is a partitioning, not an operator; call `co_location_group` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Setting co-location group")

    def start_new_chain(self):
        """Refused: a KeyedStream is a partitioning, not an operator; call `start_new_chain` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Start new chain")

    def disable_chaining(self):
        """Refused: a KeyedStream is a partitioning, not an operator; call `disable_chaining` on the operator after
        `key_by`.

        Raises:
            InvalidJobError: always.
        """
        self._refuse("Disable chaining")

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        """Re-keying keys the original stream anew, as PyFlink does."""
        return self._origin.key_by(key_selector, key_type)

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply a KeyedProcessFunction: per record, with keyed state, timers on both clocks (`on_timer`) and
        side outputs.

        Args:
            func: A KeyedProcessFunction (a plain ProcessFunction is accepted too).
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        check_function(func, "process_element", "KeyedStream.process")
        spec = t.KeyedProcessSpec(func, key_selector=self._key_selector)
        return self._one_input("KeyedProcess", spec, output_type)

    def reduce(self, func: Any) -> DataStream:
        """A running reduction per key: each record is combined with the key's previous result, which is emitted.
        In BATCH mode only the final result per key is emitted.

        Args:
            func: A ReduceFunction, or a callable `(accumulated, record) -> accumulated` of two records of the
                stream's type.

        Returns:
            The stream of the running results.

        Example:
            ```python
            pairs.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
            ```
        """
        check_function(func, "reduce", "reduce")
        spec = t.KeyedReduceSpec(func, key_selector=self._key_selector)
        return self._one_input("Keyed Reduce", spec, self.get_type())

    def _aggregate(self, kind: str, position: int | str) -> DataStream:
        if not isinstance(position, (int, str)) or isinstance(position, bool):
            raise InvalidJobError(f"{kind} takes a field position (int) or field name (str), got {position!r}")
        spec = t.KeyedReduceSpec(FieldAggregator(kind, position), key_selector=self._key_selector)
        return self._one_input("Keyed Aggregation", spec, self.get_type())

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        """A running sum per key of one field.

        Args:
            position_to_sum: The field: an index of a tuple, list or Row, or a field name of a Row; 0 for a
                stream of numbers.

        Returns:
            The stream of records with the field replaced by the running sum (the other fields of the key's first
            record).
        """
        return self._aggregate("sum", position_to_sum)

    def min(self, position_to_min: int | str = 0) -> DataStream:
        """A running minimum per key of one field; the other fields are the key's first record's.

        Args:
            position_to_min: The field's index or Row field name.

        Returns:
            The stream of running minima.
        """
        return self._aggregate("min", position_to_min)

    def max(self, position_to_max: int | str = 0) -> DataStream:
        """A running maximum per key of one field; the other fields are the key's first record's.

        Args:
            position_to_max: The field's index or Row field name.

        Returns:
            The stream of running maxima.
        """
        return self._aggregate("max", position_to_max)

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        """Per key, the whole record with the smallest value of one field so far.

        Args:
            position_to_min_by: The field's index or Row field name.

        Returns:
            The stream of those records.
        """
        return self._aggregate("min_by", position_to_min_by)

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        """Per key, the whole record with the largest value of one field so far.

        Args:
            position_to_max_by: The field's index or Row field name.

        Returns:
            The stream of those records.
        """
        return self._aggregate("max_by", position_to_max_by)

    def window(self, window_assigner: Any) -> WindowedStream:
        """Group each key's records into windows.

        Args:
            window_assigner: A WindowAssigner: `TumblingEventTimeWindows.of(size)`, `SlidingEventTimeWindows`,
                `EventTimeSessionWindows.with_gap(gap)`, `GlobalWindows.create()`, their processing-time forms, ...

        Returns:
            The WindowedStream, to finish with `reduce`, `aggregate`, `process` or `apply`.

        Example:
            ```python
            keyed.window(TumblingEventTimeWindows.of(Duration.of_minutes(1))).reduce(lambda a, b: a + b)
            ```
        """
        from fluvial.datastream.windowed_stream import WindowedStream

        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        """Windows of `size` records per key (sliding by `slide` when > 0), as PyFlink's count windows."""
        from fluvial.datastream.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        if not isinstance(slide, int) or slide < 0:
            raise InvalidJobError(f"count_window slide must be an int >= 0 (0: tumbling), got {slide!r}")
        assigner = CountSlidingWindowAssigner.of(size, slide) if slide else CountTumblingWindowAssigner.of(size)
        return self.window(assigner)


@dataclass(frozen=True, slots=True)
class FieldAggregator:
    """A reduce function for one field, with Flink's semantics:
    - sum/min/max: the result is the first record of the key with only that field replaced by the aggregate;
    - min_by/max_by: the result is the whole record holding the extreme value (the earlier one on ties).
    Records may be plain numbers (position 0), tuples/lists (positions), Rows or dicts (names or positions).
    """

    kind: str
    position: int | str

    def reduce(self, acc: Any, value: Any) -> Any:
        old, new = self._field(acc), self._field(value)
        kind = self.kind
        if kind == "sum":
            return self._with_field(acc, old + new)
        if kind == "min":
            return acc if old <= new else self._with_field(acc, new)
        if kind == "max":
            return acc if old >= new else self._with_field(acc, new)
        if kind == "min_by":
            return acc if old <= new else value
        return acc if old >= new else value  # max_by

    def _field(self, record: Any) -> Any:
        if isinstance(record, (int, float)) and not isinstance(record, bool):
            if self.position not in (0, "0"):
                raise InvalidJobError(f"{self.kind}({self.position!r}) on a plain number: use position 0")
            return record
        try:
            return record[self.position]
        except (IndexError, KeyError, TypeError):
            raise InvalidJobError(
                f"{self.kind}({self.position!r}): record {record!r} has no field {self.position!r}"
            ) from None

    def _with_field(self, record: Any, value: Any) -> Any:
        if isinstance(record, (int, float)):
            return value
        if isinstance(record, tuple) and not hasattr(record, "_fields"):
            items = list(record)
            items[self.position] = value
            return tuple(items)
        if isinstance(record, list):
            copy = list(record)
            copy[self.position] = value
            return copy
        if isinstance(record, dict):
            return {**record, self.position: value}
        return _replace_row_field(record, self.position, value)


def _replace_row_field(row: Any, position: int | str, value: Any) -> Any:
    """Rows (and named tuples) are rebuilt, never mutated: the previous aggregate may still be in flight."""
    if hasattr(row, "_replace") and isinstance(position, str):
        return row._replace(**{position: value})
    from fluvial.common.row import Row

    if isinstance(row, Row):
        values = list(row)
        fields = getattr(row, "_fields", None)  # unset on a positional row
        index = position if isinstance(position, int) else fields.index(position)
        values[index] = value
        fresh = Row(*values)
        if fields:
            fresh.set_field_names(fields)
        fresh.set_row_kind(row.get_row_kind())
        return fresh
    raise InvalidJobError(f"cannot aggregate field {position!r} of {type(row).__name__} records")
