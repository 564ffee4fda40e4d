"""The file-based write-ahead log: framing, durability, torn tails, corruption, rolling, cleaning, concurrency."""

from __future__ import annotations

import os
import struct
import threading
import zlib
from pathlib import Path

import pytest

from fluvial.receiver.wal import (
    WalCorruptionError,
    WalError,
    WalRecordHandle,
    WriteAheadLog,
    encode_frame,
)

pytestmark = pytest.mark.timeout(30)


def segment_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.iterdir() if path.name.startswith("log-"))


def test_records_round_trip_by_handle_and_in_order(tmp_path):
    with WriteAheadLog(tmp_path) as wal:
        payloads = [b"first", b"", b"x" * 10_000, bytes(range(256))]
        handles = [wal.write(payload, 1_000 + i) for i, payload in enumerate(payloads)]
        assert [wal.read(handle) for handle in handles] == payloads
        assert list(wal.read_all()) == payloads
    assert handles[0] == WalRecordHandle(handles[0].path, 0, 5, 1_000)
    assert handles[1].offset == 8 + 5
    assert Path(handles[0].path).parent == tmp_path.absolute()


def test_records_survive_reopening_and_new_writes_go_to_a_new_segment(tmp_path):
    wal = WriteAheadLog(tmp_path)
    handle = wal.write(b"durable", 10)
    wal.close()
    reopened = WriteAheadLog(tmp_path)
    assert reopened.read(handle) == b"durable"
    later = reopened.write(b"later", 20)
    assert later.path != handle.path
    assert list(reopened.read_all()) == [b"durable", b"later"]
    assert [segment.sequence for segment in reopened.segments()] == [0, 1]
    reopened.close()


def test_write_is_on_disk_before_it_returns(tmp_path):
    wal = WriteAheadLog(tmp_path)
    handle = wal.write(b"payload", 5)
    # read the file with no help from the writer: the whole frame is there
    assert Path(handle.path).read_bytes() == encode_frame(b"payload")
    wal.close()


@pytest.mark.parametrize(
    "torn_tail",
    [
        pytest.param(b"\x00\x00", id="short-header"),
        pytest.param(encode_frame(b"never acknowledged")[:-5], id="short-payload"),
        pytest.param(encode_frame(b"never acknowledged")[:-1] + b"?", id="bad-checksum"),
        pytest.param(b"\x00" * 40, id="zero-filled"),
    ],
)
def test_a_torn_last_record_is_skipped_and_truncated(tmp_path, torn_tail):
    wal = WriteAheadLog(tmp_path)
    wal.write(b"one", 1)
    handle = wal.write(b"two", 2)
    wal.close()
    whole_size = os.path.getsize(handle.path)
    with open(handle.path, "ab") as file:  # a crash in the middle of a third write
        file.write(torn_tail)

    assert list(wal.read_all()) == [b"one", b"two"]  # skipped when reading, before any repair
    assert os.path.getsize(handle.path) == whole_size + len(torn_tail)
    reopened = WriteAheadLog(tmp_path)
    assert os.path.getsize(handle.path) == whole_size
    assert list(reopened.read_all()) == [b"one", b"two"]
    reopened.write(b"three", 3)
    assert list(reopened.read_all()) == [b"one", b"two", b"three"]
    reopened.close()


def test_read_all_skips_a_torn_tail_without_reopening(tmp_path):
    wal = WriteAheadLog(tmp_path)
    handle = wal.write(b"one", 1)
    wal.close()
    with open(handle.path, "ab") as file:
        file.write(encode_frame(b"torn")[:6])
    assert list(wal.read_all()) == [b"one"]


def test_corruption_in_an_earlier_segment_raises_naming_segment_and_offset(tmp_path):
    wal = WriteAheadLog(tmp_path, rolling_interval_ms=10)
    wal.write(b"a", 0)
    bad = wal.write(b"bbbb", 1)
    wal.write(b"c", 20)  # second segment
    wal.close()
    with open(bad.path, "r+b") as file:
        file.seek(bad.offset + 8)
        file.write(b"XXXX")

    with pytest.raises(WalCorruptionError) as caught:
        list(wal.read_all())
    assert caught.value.segment == bad.path
    assert caught.value.offset == bad.offset
    assert bad.path in str(caught.value) and f"offset {bad.offset}" in str(caught.value)
    with pytest.raises(WalCorruptionError, match=f"offset {bad.offset}"):
        wal.read(bad)


def test_corruption_followed_by_more_records_in_the_last_segment_raises(tmp_path):
    wal = WriteAheadLog(tmp_path)
    wal.write(b"a", 0)
    bad = wal.write(b"bbbb", 1)
    wal.write(b"c", 2)
    wal.close()
    with open(bad.path, "r+b") as file:
        file.seek(bad.offset + 8)
        file.write(b"XXXX")
    with pytest.raises(WalCorruptionError, match="followed by more data") as caught:
        list(wal.read_all())
    assert caught.value.offset == bad.offset
    with pytest.raises(WalCorruptionError):
        WriteAheadLog(tmp_path)  # opening does not truncate real corruption away


def test_a_short_record_in_an_earlier_segment_is_corruption_not_a_torn_tail(tmp_path):
    wal = WriteAheadLog(tmp_path, rolling_interval_ms=10)
    first = wal.write(b"a", 0)
    wal.write(b"b", 20)
    wal.close()
    with open(first.path, "ab") as file:
        file.write(b"\x00\x00\x00")
    with pytest.raises(WalCorruptionError, match="not the last segment") as caught:
        list(wal.read_all())
    assert caught.value.segment == first.path


def test_empty_segments_are_fine(tmp_path):
    (tmp_path / "log-00000000-0-100").touch()
    wal = WriteAheadLog(tmp_path)
    assert list(wal.read_all()) == []
    wal.write(b"after", 200)
    (tmp_path / "log-00000005-300-400").touch()  # an empty segment last, too
    assert list(wal.read_all()) == [b"after"]
    assert [segment.sequence for segment in wal.segments()] == [0, 1, 5]
    wal.close()


def test_segments_roll_by_time_and_clean_deletes_exactly_the_old_ones(tmp_path):
    wal = WriteAheadLog(tmp_path, rolling_interval_ms=100)
    for time_ms in (0, 50, 99, 100, 150, 250):
        wal.write(str(time_ms).encode(), time_ms)
    spans = [(segment.start_ms, segment.end_ms) for segment in wal.segments()]
    assert spans == [(0, 100), (100, 200), (250, 350)]

    assert wal.clean(99) == []
    deleted = wal.clean(200)
    assert [Path(path).name for path in deleted] == ["log-00000000-0-100", "log-00000001-100-200"]
    assert list(wal.read_all()) == [b"250"]
    assert wal.clean(350) == [str(tmp_path.absolute() / "log-00000002-250-350")]  # the open segment, too
    wal.write(b"400", 400)
    assert list(wal.read_all()) == [b"400"]
    wal.close()


def test_segments_roll_by_size(tmp_path):
    wal = WriteAheadLog(tmp_path, max_segment_bytes=3 * (8 + 10))
    handles = [wal.write(b"0123456789", 0) for _ in range(7)]
    big = wal.write(b"y" * 100, 0)  # bigger than a segment: one of its own
    assert len({h.path for h in handles}) == 3
    assert [os.path.getsize(path) for path in sorted({h.path for h in handles})] == [54, 54, 18]
    assert big.path not in {h.path for h in handles} and big.offset == 0
    assert list(wal.read_all()) == [b"0123456789"] * 7 + [b"y" * 100]
    wal.close()


def test_a_record_read_after_its_segment_was_cleaned_is_a_clear_error(tmp_path):
    wal = WriteAheadLog(tmp_path, rolling_interval_ms=10)
    handle = wal.write(b"old", 0)
    wal.clean(10)
    with pytest.raises(WalError, match="no longer exists"):
        wal.read(handle)
    wal.close()


def test_concurrent_writers_lose_and_mix_nothing(tmp_path):
    wal = WriteAheadLog(tmp_path, rolling_interval_ms=5, max_segment_bytes=4096)
    results: dict[bytes, WalRecordHandle] = {}
    start = threading.Barrier(8)

    def writer(n: int) -> None:
        start.wait()
        for i in range(50):
            payload = f"{n}:{i}:".encode() + b"x" * (10 * (i % 4))
            results[payload] = wal.write(payload, i)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 400
    assert all(wal.read(handle) == payload for payload, handle in results.items())
    everything = list(wal.read_all())
    assert sorted(everything) == sorted(results)
    for n in range(8):  # each writer's records appear in the order it wrote them
        mine = [p for p in everything if p.startswith(f"{n}:".encode())]
        assert [int(p.split(b":")[1]) for p in mine] == list(range(50))
    wal.close()


def test_closed_log_refuses_writes_and_cleaning_but_reads(tmp_path):
    wal = WriteAheadLog(tmp_path)
    handle = wal.write(b"kept", 1)
    wal.close()
    with pytest.raises(WalError, match="closed"):
        wal.write(b"more", 2)
    with pytest.raises(WalError, match="closed"):
        wal.clean(10)
    assert wal.read(handle) == b"kept"


def test_bad_arguments_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="rolling interval"):
        WriteAheadLog(tmp_path, rolling_interval_ms=0)
    wal = WriteAheadLog(tmp_path)
    with pytest.raises(TypeError, match="bytes"):
        wal.write("text", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=">= 0"):
        wal.write(b"x", -1)
    wal.close()


def test_checksum_covers_the_length_so_zeros_are_not_an_empty_record():
    assert encode_frame(b"")[:8] != b"\x00" * 8
    length, crc = struct.unpack(">II", encode_frame(b"abc")[:8])
    assert (length, crc) == (3, zlib.crc32(b"abc", zlib.crc32(struct.pack(">I", 3))))
