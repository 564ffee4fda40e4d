"""ScriptedSource's reader: records in script order, Pause until its file exists, Crash once (the restarted
attempt goes on past it), End, and a checkpointed position that resumes with the first record it did not
cover."""

from __future__ import annotations

import pytest

from fluvial.datastream.connectors.source import Boundedness
from fluvial.testing import Crash, End, Pause, ScriptCrash, ScriptedSource


def reader_of(source: ScriptedSource, splits=None):
    reader = source.create_reader(None)
    reader.add_splits(splits if splits is not None else source.create_splits(1))
    return reader


def drain(reader) -> list:
    records: list = []
    while (batch := reader.poll(10)) is not None:
        records.extend(batch)
    return records


def test_records_come_in_order_at_most_max_records_at_a_time_then_the_end() -> None:
    reader = reader_of(ScriptedSource([1, 2, 3, End(), 4]))
    assert reader.poll(2) == [1, 2]
    assert reader.poll(10) == [3]
    assert reader.poll(10) is None


def test_pause_holds_the_script_until_its_file_exists(tmp_path) -> None:
    release = tmp_path / "go"
    reader = reader_of(ScriptedSource([1, Pause(str(release)), 2]))
    assert reader.poll(10) == [1]
    assert reader.poll(10) == [] and reader.poll(10) == []
    release.touch()
    assert reader.poll(10) == [2]


def test_crash_fails_once_after_what_came_before_it(tmp_path) -> None:
    marker = tmp_path / "crashed"
    source = ScriptedSource([1, Crash(str(marker), "planned"), 2])
    reader = reader_of(source)
    assert reader.poll(10) == [1]
    with pytest.raises(ScriptCrash, match="planned"):
        reader.poll(10)
    again = reader_of(source)  # the restarted attempt, from the beginning
    assert drain(again) == [1, 2], "the marker file says the crash already happened"


def test_a_restored_reader_resumes_after_what_its_snapshot_covered() -> None:
    source = ScriptedSource(["a", "b", "c", "d"])
    reader = reader_of(source)
    assert reader.poll(2) == ["a", "b"]
    restored = reader_of(source, reader.snapshot_state())
    assert restored.poll(10) == ["c", "d"]


def test_an_unbounded_script_never_ends() -> None:
    source = ScriptedSource([1], unbounded=True)
    assert source.get_boundedness() is Boundedness.CONTINUOUS_UNBOUNDED
    reader = reader_of(source)
    assert reader.poll(10) == [1]
    assert reader.poll(10) == [] and reader.poll(10) == []
