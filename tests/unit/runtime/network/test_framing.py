"""Frames on a byte stream: whole frames however the bytes arrive; bad frames and short reads refused."""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.runtime.network.framing import (
    HEADER,
    MAX_FRAME_BYTES,
    BadFrameError,
    FrameKind,
    FrameReader,
    FrameWriter,
)

pytestmark = pytest.mark.timeout(30)


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair()


def test_frames_round_trip_in_order():
    a, b = pair()
    writer, reader = FrameWriter(a), FrameReader(b)
    writer.write(FrameKind.DATA, b"one")
    writer.write(FrameKind.CREDIT, b"")
    writer.write(FrameKind.CONTROL, b"x" * 200_000)
    assert reader.read() == (FrameKind.DATA, b"one")
    assert reader.read() == (FrameKind.CREDIT, b"")
    assert reader.read() == (FrameKind.CONTROL, b"x" * 200_000)
    a.close()
    assert reader.read() is None  # a clean close between frames


def test_a_prefix_goes_in_front_of_the_payload_in_the_same_frame():
    a, b = pair()
    writer, reader = FrameWriter(a), FrameReader(b)
    writer.write(FrameKind.BUFFER, b"records", prefix=b"head:")
    writer.write(FrameKind.DATA, b"next")
    assert reader.read() == (FrameKind.BUFFER, b"head:records")
    assert reader.read() == (FrameKind.DATA, b"next")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=20), st.integers(1, 17))
def test_frames_split_anywhere_come_out_whole(payloads, chunk):
    stream = b"".join(HEADER.pack(FrameKind.DATA, len(p)) + p for p in payloads)
    a, b = pair()
    reader = FrameReader(b)
    for start in range(0, len(stream), chunk):
        a.sendall(stream[start : start + chunk])
    a.close()
    assert [reader.read() for _ in payloads] == [(FrameKind.DATA, p) for p in payloads]
    assert reader.read() is None
    b.close()


def test_an_unknown_kind_is_a_bad_frame():
    a, b = pair()
    a.sendall(struct.pack(">BI", 99, 0))
    with pytest.raises(BadFrameError, match="unknown frame kind 99"):
        FrameReader(b).read()


def test_a_frame_over_the_limit_is_refused_before_it_is_read():
    a, b = pair()
    a.sendall(struct.pack(">BI", FrameKind.DATA, MAX_FRAME_BYTES + 1))
    with pytest.raises(BadFrameError, match="over the limit"):
        FrameReader(b).read()


def test_a_stream_ending_inside_a_frame_is_a_short_read():
    a, b = pair()
    a.sendall(HEADER.pack(FrameKind.DATA, 10) + b"12345")
    a.close()
    with pytest.raises(ConnectionError, match="inside a frame"):
        FrameReader(b).read()


def test_a_stream_ending_inside_a_header_is_a_short_read():
    a, b = pair()
    a.sendall(b"\x01\x00")
    a.close()
    with pytest.raises(ConnectionError, match="inside a frame"):
        FrameReader(b).read()
