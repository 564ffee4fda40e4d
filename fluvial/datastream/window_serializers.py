"""Serializers of the window types (PyFlink `pyflink.datastream.window`): Flink's byte layouts, big-endian.

- TimeWindow: start and end as two 8-byte longs;
- CountWindow: its id as one 8-byte long;
- GlobalWindow: a single 0 byte.

fluvial keeps windows as Python objects in state; these are what a custom window assigner returns from
`get_window_serializer()`, and they round-trip windows through any byte stream.
"""

from __future__ import annotations

import struct
from io import BytesIO

from fluvial.common.serializer import TypeSerializer
from fluvial.datastream.window_assigners import CountWindow, GlobalWindow, TimeWindow

__all__ = ["CountWindowSerializer", "GlobalWindowSerializer", "TimeWindowSerializer"]

_TWO_LONGS = struct.Struct(">qq")
_LONG = struct.Struct(">q")


def _read(stream: BytesIO, size: int, what: str) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError(f"the stream ended inside a serialized {what} ({len(data)} of {size} bytes)")
    return data


class TimeWindowSerializer(TypeSerializer[TimeWindow]):
    """Serializes TimeWindows (PyFlink's `TimeWindowSerializer`), for state keyed by window."""

    def serialize(self, element: TimeWindow, stream: BytesIO) -> None:
        """Write a TimeWindow to a stream.

        Args:
            element: The window.
            stream: The binary stream.
        """
        stream.write(_TWO_LONGS.pack(element.start, element.end))

    def deserialize(self, stream: BytesIO) -> TimeWindow:
        """Read a TimeWindow from a stream.

        Args:
            stream: The binary stream.

        Returns:
            The window.
        """
        return TimeWindow(*_TWO_LONGS.unpack(_read(stream, _TWO_LONGS.size, "TimeWindow")))

    def copy(self, element: TimeWindow) -> TimeWindow:
        """The window itself: windows are immutable."""
        return element  # immutable


class CountWindowSerializer(TypeSerializer[CountWindow]):
    """Serializes CountWindows (PyFlink's `CountWindowSerializer`), for state keyed by window."""

    def serialize(self, element: CountWindow, stream: BytesIO) -> None:
        """Write a CountWindow to a stream.

        Args:
            element: The window.
            stream: The binary stream.
        """
        stream.write(_LONG.pack(element.id))

    def deserialize(self, stream: BytesIO) -> CountWindow:
        """Read a CountWindow from a stream.

        Args:
            stream: The binary stream.

        Returns:
            The window.
        """
        return CountWindow(_LONG.unpack(_read(stream, _LONG.size, "CountWindow"))[0])


class GlobalWindowSerializer(TypeSerializer[GlobalWindow]):
    """Serializes GlobalWindows (PyFlink's `GlobalWindowSerializer`), for state keyed by window."""

    def serialize(self, element: GlobalWindow, stream: BytesIO) -> None:
        """Write a GlobalWindow to a stream.

        Args:
            element: The window.
            stream: The binary stream.
        """
        stream.write(b"\x00")

    def deserialize(self, stream: BytesIO) -> GlobalWindow:
        """Read a GlobalWindow from a stream.

        Args:
            stream: The binary stream.

        Returns:
            The window.
        """
        _read(stream, 1, "GlobalWindow")
        return GlobalWindow.get()

    def copy(self, element: GlobalWindow) -> GlobalWindow:
        """The window itself: windows are immutable."""
        return element
