"""WindowedStream and AllWindowedStream (PyFlink's): a keyed (or all-in-one) stream cut into windows, waiting
for the function that turns each fired window into results. Configuration calls (`trigger`, `evictor`,
`allowed_lateness`, `side_output_late_data`) return the same stream; a function call ends it in a DataStream.

Every variant compiles to the one window operator primitive, described by a WindowSpec.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import to_millis
from fluvial.datastream import transformations as t
from fluvial.datastream.data_stream import DataStream
from fluvial.datastream.output_tag import OutputTag

_A = t.WindowAggregation
_F = t.WindowFunctionKind


class _Windowed:
    _all = False

    def __init__(self, stream: DataStream, assigner: Any) -> None:
        if not hasattr(assigner, "assign_windows"):
            raise InvalidJobError(
                f"window(...) expects a WindowAssigner (e.g. TumblingEventTimeWindows.of(...)), got {assigner!r}"
            )
        self._stream = stream
        self._spec = t.WindowSpec(assigner=assigner)

    def get_execution_environment(self) -> Any:
        """The StreamExecutionEnvironment of the windowed stream."""
        return self._stream.get_execution_environment()

    def get_input_type(self) -> Any:
        """The type of the records entering the windows (the keyed stream's type)."""
        return self._stream.get_type()

    def trigger(self, trigger: Any) -> Any:
        if not hasattr(trigger, "on_element"):
            raise InvalidJobError(f"trigger(...) expects a Trigger (e.g. CountTrigger.of(10)), got {trigger!r}")
        assigner = self._spec.assigner
        if hasattr(assigner, "merge_windows") and not trigger.can_merge():
            raise InvalidJobError(
                f"{trigger!r} cannot merge windows, but {assigner!r} merges them (session windows): "
                "use a trigger whose can_merge() is True"
            )
        self._spec = dataclasses.replace(self._spec, trigger=trigger)
        return self

    def evictor(self, evictor: Any) -> Any:
        if not hasattr(evictor, "evict_before"):
            raise InvalidJobError(f"evictor(...) expects an Evictor (e.g. CountEvictor.of(5)), got {evictor!r}")
        self._spec = dataclasses.replace(self._spec, evictor=evictor)
        return self

    def allowed_lateness(self, time_ms: Any) -> Any:
        lateness = to_millis(time_ms)
        if lateness < 0:
            raise InvalidJobError(f"allowed lateness must be >= 0 ms, got {lateness}")
        if lateness and not self._spec.assigner.is_event_time():
            raise InvalidJobError("allowed lateness applies to event-time windows only; remove it or use event time")
        self._spec = dataclasses.replace(self._spec, allowed_lateness=lateness)
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> Any:
        if not isinstance(output_tag, OutputTag):
            raise InvalidJobError(f"side_output_late_data expects an OutputTag, got {output_tag!r}")
        self._spec = dataclasses.replace(self._spec, late_data_tag=output_tag)
        return self

    # -- ending the windowed stream -----------------------------------------------------------------------------

    def _finish(
        self,
        function: Any,
        aggregation: t.WindowAggregation,
        window_function: Any,
        kind: t.WindowFunctionKind,
        output_type: Any,
        label: str,
    ) -> DataStream:
        spec = dataclasses.replace(
            self._spec,
            function=function,
            aggregation=aggregation,
            window_function=window_function,
            window_function_kind=kind,
            key_selector=self._key_selector(),
        )
        name = f"Window({self._spec.assigner!r}, {label})"
        result = self._source()._one_input(name, spec, output_type, type_name="Window")
        if self._all:
            result.set_parallelism(1)
        return result

    def _source(self) -> DataStream:
        return self._stream

    def _key_selector(self) -> Any:
        return self._stream._key()

    def reduce(self, reduce_function: Any, window_function: Any = None, output_type: Any = None) -> DataStream:
        if not (hasattr(reduce_function, "reduce") or callable(reduce_function)):
            raise InvalidJobError(f"reduce expects a ReduceFunction or a callable, got {reduce_function!r}")
        kind = self._function_kind(window_function)
        if output_type is None and window_function is None:
            output_type = self._stream.get_type()  # a reduce keeps its input's type
        return self._finish(reduce_function, _A.REDUCE, window_function, kind, output_type, "reduce")

    def aggregate(
        self,
        aggregate_function: Any,
        window_function: Any = None,
        accumulator_type: Any = None,
        output_type: Any = None,
    ) -> DataStream:
        if not hasattr(aggregate_function, "create_accumulator"):
            raise InvalidJobError(f"aggregate expects an AggregateFunction, got {aggregate_function!r}")
        kind = self._function_kind(window_function)
        return self._finish(aggregate_function, _A.AGGREGATE, window_function, kind, output_type, "aggregate")

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        if not hasattr(process_window_function, "process"):
            raise InvalidJobError(f"process expects a ProcessWindowFunction, got {process_window_function!r}")
        kind = _F.ALL_PROCESS if self._all else _F.PROCESS
        return self._finish(None, _A.ELEMENTS, process_window_function, kind, output_type, "process")

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        if not (hasattr(window_function, "apply") or callable(window_function)):
            raise InvalidJobError(f"apply expects a WindowFunction, got {window_function!r}")
        kind = _F.ALL_APPLY if self._all else _F.APPLY
        return self._finish(None, _A.ELEMENTS, window_function, kind, output_type, "apply")

    def _function_kind(self, window_function: Any) -> t.WindowFunctionKind:
        if window_function is None:
            return _F.PASS_THROUGH
        if hasattr(window_function, "process"):
            return _F.ALL_PROCESS if self._all else _F.PROCESS
        if hasattr(window_function, "apply") or callable(window_function):
            return _F.ALL_APPLY if self._all else _F.APPLY
        raise InvalidJobError(f"{window_function!r} is neither a ProcessWindowFunction nor a WindowFunction")


class WindowedStream(_Windowed):
    """`KeyedStream.window(assigner)`."""


class AllWindowedStream(_Windowed):
    """`DataStream.window_all(assigner)`: every record under one key, in one subtask (parallelism 1)."""

    _all = True

    def __init__(self, stream: DataStream, assigner: Any) -> None:
        from fluvial.datastream.functions import NullByteKeySelector

        super().__init__(stream.key_by(NullByteKeySelector()), assigner)
