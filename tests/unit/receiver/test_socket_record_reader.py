"""The socket text receiver's record reader: however the bytes are chunked, the records are those of the whole
stream; the first invalid byte and the first oversized record are found at their exact offsets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.datastream.connectors.socket import _RecordReader


def read(chunks: list[bytes], delimiter: str, max_size: int = 1 << 20) -> list[str]:
    reader = _RecordReader(delimiter, "utf-8", max_size)
    records = [record for chunk in chunks for record in reader.feed(chunk)]
    tail = reader.finish()
    return records + ([tail] if tail is not None else [])


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:])]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(st.characters(blacklist_characters=";\n€", blacklist_categories=("Cs",)), max_size=8), max_size=8),
    st.sampled_from(["\n", ";", "\n;", "€"]),
    st.lists(st.integers(0, 200), max_size=10),
)
def test_chunking_never_changes_the_records(lines, delimiter, cuts):
    text = delimiter.join(lines)
    expected = text.split(delimiter)
    if expected[-1] == "":
        expected.pop()  # nothing after the last delimiter is no record (a trailing delimiter ends the last one)
    assert read(chunked(text.encode(), cuts), delimiter) == expected


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.lists(st.integers(0, 60), max_size=6))
def test_the_first_invalid_byte_is_named_at_its_offset_however_chunked(data, cuts):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        expected = error.start
    else:
        return
    if b"\n" in data:
        return  # a delimiter changes which chunk is decoded when, not where the byte is; kept simple here
    with pytest.raises(ValueError, match=f"at offset {expected} of the connection is not valid utf-8"):
        read(chunked(data, cuts), "\n")


def test_an_oversized_record_is_named_by_its_start_offset_even_when_complete():
    with pytest.raises(ValueError, match="starting at byte offset 4 .* max_record_size \\(5 bytes\\)"):
        read([b"abc\n" + b"x" * 6 + b"\nok\n"], "\n", max_size=5)
    with pytest.raises(ValueError, match="starting at byte offset 0"):
        read([b"abc", b"def"], "\n", max_size=5)
    assert read([b"abcde\n", b"fghij"], "\n", max_size=5) == ["abcde", "fghij"]
