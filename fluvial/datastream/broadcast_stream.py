"""BroadcastStream and BroadcastConnectedStream (PyFlink `pyflink.datastream.data_stream`): the API side of
broadcast state. `stream.broadcast(descriptor, ...)` makes a BroadcastStream; `other.connect(it)` a
BroadcastConnectedStream whose `process(BroadcastProcessFunction | KeyedBroadcastProcessFunction)` records a
two-input transformation, run by `fluvial.runtime.operators.broadcast`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import transformations as t

if TYPE_CHECKING:
    from fluvial.datastream.data_stream import DataStream

__all__ = ["BroadcastConnectedStream", "BroadcastStream"]


class BroadcastStream:
    """A stream whose every record goes to every subtask of the operator it is connected to, together with
    the MapStateDescriptors of the broadcast state that operator keeps."""

    def __init__(self, stream: DataStream, descriptors: tuple) -> None:
        from fluvial.datastream.state import MapStateDescriptor

        if not descriptors:
            raise InvalidJobError("a BroadcastStream needs at least one MapStateDescriptor for its broadcast state")
        for descriptor in descriptors:
            if not isinstance(descriptor, MapStateDescriptor):
                raise InvalidJobError(f"broadcast state is map state: pass MapStateDescriptors, got {descriptor!r}")
        self.stream = stream
        self.descriptors = tuple(descriptors)

    def get_execution_environment(self) -> Any:
        """The StreamExecutionEnvironment of the broadcast stream."""
        return self.stream.get_execution_environment()


class BroadcastConnectedStream:
    """A (possibly keyed) data stream connected with a BroadcastStream."""

    def __init__(self, non_broadcast_stream: DataStream, broadcast_stream: BroadcastStream) -> None:
        if non_broadcast_stream._env is not broadcast_stream.stream._env:
            raise InvalidJobError("connect of streams from different StreamExecutionEnvironments; use one env")
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply a BroadcastProcessFunction (a non-keyed input) or a KeyedBroadcastProcessFunction (a keyed one).

        Args:
            func: The function.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        from fluvial.datastream.data_stream import DataStream
        from fluvial.datastream.functions import BroadcastProcessFunction, KeyedBroadcastProcessFunction

        key = self.non_broadcast_stream._key()
        if key is not None and not isinstance(func, KeyedBroadcastProcessFunction):
            raise InvalidJobError(
                "a keyed stream connected with a broadcast stream needs a KeyedBroadcastProcessFunction"
            )
        if key is None and not isinstance(func, BroadcastProcessFunction):
            raise InvalidJobError(
                "a non-keyed stream connected with a broadcast stream needs a BroadcastProcessFunction"
            )
        env = self.non_broadcast_stream._env
        name = "Co-Process-Broadcast-Keyed" if key is not None else "Co-Process-Broadcast"
        spec = t.BroadcastProcessSpec(func, key, None, self.broadcast_stream.descriptors)
        tid = env._add_transformation(
            t.TwoInputTransformation,
            name=name,
            input1_id=self.non_broadcast_stream._id,
            input2_id=self.broadcast_stream.stream._id,
            operator=spec,
            output_type=output_type,
            type_name=name,
        )
        return DataStream(env, tid)
