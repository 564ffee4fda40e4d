"""ConnectedStreams (PyFlink's): two streams feeding one two-input operator (CoMap, CoFlatMap, CoProcess)."""

from __future__ import annotations

from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import transformations as t
from fluvial.datastream.data_stream import DataStream, check_function


class ConnectedStreams:
    """Two streams connected for one operator that sees both (PyFlink's `ConnectedStreams`), made by
    `DataStream.connect`. The inputs may have different types and share state.
    """

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def _keys(self) -> tuple[Any, Any]:
        return self.stream1._key(), self.stream2._key()

    def key_by(self, key_selector1: Any, key_selector2: Any, key_type: Any = None) -> ConnectedStreams:
        """Key both inputs, so that records of one key from either go to the same subtask.

        Args:
            key_selector1: The first input's key selector.
            key_selector2: The second input's key selector.
            key_type: The keys' TypeInformation (both inputs' keys are checked against it, as `DataStream.key_by`
                checks one input's).

        Returns:
            The keyed ConnectedStreams.
        """
        return ConnectedStreams(
            self.stream1.key_by(key_selector1, key_type), self.stream2.key_by(key_selector2, key_type)
        )

    def _two_input(self, name: str, spec: t.OperatorSpec, output_type: Any) -> DataStream:
        env = self.stream1._env
        tid = env._add_transformation(
            t.TwoInputTransformation,
            name=name,
            input1_id=self.stream1._id,
            input2_id=self.stream2._id,
            operator=spec,
            output_type=output_type,
            type_name=name,
        )
        return DataStream(env, tid)

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply a CoMapFunction: `map1` to the first input's records, `map2` to the second's.

        Args:
            func: The CoMapFunction.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        check_function(func, "map1", "ConnectedStreams.map")
        if not hasattr(func, "map1"):
            raise InvalidJobError("ConnectedStreams.map needs a CoMapFunction (map1 and map2)")
        k1, k2 = self._keys()
        return self._two_input("Co-Map", t.CoMapSpec(func, k1, k2), output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply a CoFlatMapFunction to both inputs.

        Args:
            func: The CoFlatMapFunction.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        if not hasattr(func, "flat_map1"):
            raise InvalidJobError("ConnectedStreams.flat_map needs a CoFlatMapFunction (flat_map1 and flat_map2)")
        k1, k2 = self._keys()
        return self._two_input("Co-Flat Map", t.CoFlatMapSpec(func, k1, k2), output_type)

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply a CoProcessFunction, or a KeyedCoProcessFunction when both inputs are keyed.

        Args:
            func: The function.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        if not hasattr(func, "process_element1"):
            raise InvalidJobError("ConnectedStreams.process needs a CoProcessFunction or KeyedCoProcessFunction")
        k1, k2 = self._keys()
        if (k1 is None) != (k2 is None):
            raise InvalidJobError("connect a keyed stream only with a keyed stream: key_by both inputs")
        if k1 is not None:
            return self._two_input("KeyedCoProcess", t.KeyedCoProcessSpec(func, k1, k2), output_type)
        return self._two_input("Co-Process", t.CoProcessSpec(func), output_type)
