"""The write-ahead log when its disk misbehaves (issue 13, defect 4): a record whose handle was returned is
durable — after its directory or segment was deleted, after failed writes — or the write raises naming the log.
And its files are private (defect 11)."""

from __future__ import annotations

import errno
import os
import shutil
import stat

import pytest

from fluvial.common.private_files import UntrustedLocationError
from fluvial.receiver import wal as wal_module
from fluvial.receiver.wal import WalDurabilityError, WalError, WriteAheadLog

pytestmark = pytest.mark.timeout(30)


def recovered(directory) -> list[bytes]:
    """What a new process finds on disk."""
    with WriteAheadLog(directory) as fresh:
        return list(fresh.read_all())


def test_a_deleted_directory_is_recreated_and_the_open_segment_restored(tmp_path):
    directory = tmp_path / "wal"
    wal = WriteAheadLog(directory)
    first = wal.write(b"one", 10)
    wal.write(b"two", 11)
    shutil.rmtree(directory)
    third = wal.write(b"three", 12)
    assert third.path == first.path  # the segment came back under its own name, so handles stay valid
    assert [wal.read(first), wal.read(third)] == [b"one", b"three"]
    wal.close()
    assert recovered(directory) == [b"one", b"two", b"three"]


def test_a_deleted_open_segment_is_restored(tmp_path):
    wal = WriteAheadLog(tmp_path / "wal")
    handle = wal.write(b"one", 10)
    os.remove(handle.path)
    wal.write(b"two", 11)
    wal.close()
    assert recovered(tmp_path / "wal") == [b"one", b"two"]


def test_an_open_segment_that_cannot_be_restored_fails_the_log(tmp_path):
    wal = WriteAheadLog(tmp_path / "wal")
    handle = wal.write(b"one", 10)
    os.remove(handle.path)
    with open(handle.path, "wb") as planted:  # something else took the name
        planted.write(b"not ours")
    with pytest.raises(WalDurabilityError, match="was deleted while open and could not be restored"):
        wal.write(b"two", 11)
    with pytest.raises(WalDurabilityError, match="takes no more records"):
        wal.write(b"three", 12)
    wal.close()


def test_a_deleted_closed_segment_fails_every_later_write_naming_the_log(tmp_path):
    directory = tmp_path / "wal"
    wal = WriteAheadLog(directory, rolling_interval_ms=10)
    old = wal.write(b"in a closed segment", 0)
    wal.write(b"in the open segment", 20)
    shutil.rmtree(directory)
    with pytest.raises(WalDurabilityError) as caught:
        wal.write(b"next", 21)
    message = str(caught.value)
    assert os.path.basename(old.path) in message and str(directory) in message and "no longer durable" in message
    with pytest.raises(WalDurabilityError, match="takes no more records"):
        wal.write(b"later", 22)
    wal.close()


class FailingWrites:
    """Replaces os.write for the log's segment files: the first `failures` calls write half the bytes, then
    raise ENOSPC (what a full disk does mid-record)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.real = os.write

    def __call__(self, fd, data):
        if self.failures and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith("log-"):
            self.failures -= 1
            self.real(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.real(fd, data)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd to tell segment files apart")
def test_a_failed_write_is_retried_in_a_new_segment_without_a_torn_record(tmp_path, monkeypatch, caplog):
    delays = []
    wal = WriteAheadLog(tmp_path / "wal", sleep=delays.append)
    wal.write(b"before", 10)
    monkeypatch.setattr(wal_module.os, "write", FailingWrites(2))
    handle = wal.write(b"x" * 1000, 11)
    monkeypatch.undo()
    assert wal.read(handle) == b"x" * 1000 and delays == [0.05, 0.1]
    assert "write attempt 1 of 3 failed" in caplog.text
    wal.write(b"after", 12)
    wal.close()
    assert recovered(tmp_path / "wal") == [b"before", b"x" * 1000, b"after"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd to tell segment files apart")
def test_a_write_that_keeps_failing_raises_naming_the_log_and_the_log_stays_usable(tmp_path, monkeypatch):
    wal = WriteAheadLog(tmp_path / "wal", max_write_attempts=2, sleep=lambda _: None)
    monkeypatch.setattr(wal_module.os, "write", FailingWrites(2))
    with pytest.raises(WalError) as caught:
        wal.write(b"lost", 10)
    monkeypatch.undo()
    assert f"write-ahead log in {tmp_path / 'wal'} failed 2 time(s)" in str(caught.value)
    assert "No space left on device" in str(caught.value)
    wal.write(b"disk has room again", 11)
    wal.close()
    assert recovered(tmp_path / "wal") == [b"disk has room again"]


def test_segments_and_directories_are_private(tmp_path):
    directory = tmp_path / "a" / "wal"
    with WriteAheadLog(directory) as wal:
        handle = wal.write(b"secret", 1)
    assert stat.S_IMODE(os.stat(handle.path).st_mode) == 0o600
    assert [stat.S_IMODE(os.stat(d).st_mode) for d in (tmp_path / "a", directory)] == [0o700, 0o700]


def test_a_log_others_can_write_is_not_reopened(tmp_path):
    with WriteAheadLog(tmp_path / "wal") as wal:
        wal.write(b"x", 1)
    os.chmod(tmp_path / "wal", 0o777)
    with pytest.raises(UntrustedLocationError, match="writable by group and others"):
        WriteAheadLog(tmp_path / "wal")
