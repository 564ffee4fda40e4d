"""TypeSerializer (PyFlink `pyflink.common.serializer`): turns values of one type into bytes on a stream and back.

fluvial moves records between Python operators as objects and pickles buffers across processes
(`fluvial.common.wire`), so no built-in path needs a TypeSerializer. A user's serializer is still honoured
where PyFlink takes one: a custom state serializer or a custom window serializer is a picklable object with
these methods. `PickleSerializer` is the default for any Python value.
"""

from __future__ import annotations

import abc
import copy
import pickle
import struct
from io import BytesIO
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["PickleSerializer", "TypeSerializer"]

_LENGTH = struct.Struct(">i")


class TypeSerializer(abc.ABC, Generic[T]):
    """Writes one value to `stream` (`serialize`) and reads one back (`deserialize`). A serializer is
    stateless and picklable; two of the same class are equal."""

    @abc.abstractmethod
    def serialize(self, element: T, stream: BytesIO) -> None:
        """Write a value to a stream.

        Args:
            element: The value.
            stream: The binary stream.
        """

    @abc.abstractmethod
    def deserialize(self, stream: BytesIO) -> T:
        """Read a value from a stream.

        Args:
            stream: The binary stream.

        Returns:
            The value.
        """

    def copy(self, element: T) -> T:
        """A copy of a value (immutable values may be returned as they are).

        Args:
            element: The value.

        Returns:
            The copy.
        """
        return copy.deepcopy(element)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PickleSerializer(TypeSerializer[Any]):
    """Any picklable Python value, length-prefixed (a 4-byte big-endian length, as Flink's byte arrays)."""

    def serialize(self, element: Any, stream: BytesIO) -> None:
        data = pickle.dumps(element, protocol=5)
        stream.write(_LENGTH.pack(len(data)))
        stream.write(data)

    def deserialize(self, stream: BytesIO) -> Any:
        header = stream.read(_LENGTH.size)
        if len(header) < _LENGTH.size:
            raise EOFError("the stream ended before a serialized value's length")
        (length,) = _LENGTH.unpack(header)
        data = stream.read(length)
        if len(data) < length:
            raise EOFError(f"the stream ended inside a serialized value ({len(data)} of {length} bytes)")
        return pickle.loads(data)
