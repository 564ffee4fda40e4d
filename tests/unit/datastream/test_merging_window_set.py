"""MergingWindowSet: actual windows -> state windows under session merging, the merge reports the window
operator relies on, and persistence as a plain dict."""

from __future__ import annotations

import pickle
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common.errors import StateError
from fluvial.datastream.merging_window_set import MergingWindowSet
from fluvial.datastream.window import (
    EventTimeSessionWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    TimeWindow,
)

SESSIONS = EventTimeSessionWindows.with_gap(10)  # merge_windows does not depend on the gap


class Recorder:
    """A merge function that records its calls: (merge_result, merged_windows, state_window, merged_states)."""

    def __init__(self) -> None:
        self.calls: list[tuple[TimeWindow, list[TimeWindow], TimeWindow, list[TimeWindow]]] = []

    def __call__(self, merge_result: Any, merged: Any, state_window: Any, merged_states: Any) -> None:
        self.calls.append((merge_result, list(merged), state_window, list(merged_states)))


def test_a_new_window_maps_to_itself() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    assert windows.add_window(TimeWindow(0, 5), recorder) == TimeWindow(0, 5)
    assert windows.get_state_window(TimeWindow(0, 5)) == TimeWindow(0, 5)
    assert recorder.calls == []
    assert windows.snapshot() == {TimeWindow(0, 5): TimeWindow(0, 5)}


def test_overlapping_window_extends_the_session_keeping_its_state_window() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    windows.add_window(TimeWindow(0, 5), recorder)
    assert windows.add_window(TimeWindow(3, 8), recorder) == TimeWindow(0, 8)
    assert recorder.calls == [(TimeWindow(0, 8), [TimeWindow(0, 5)], TimeWindow(0, 5), [])]
    assert windows.snapshot() == {TimeWindow(0, 8): TimeWindow(0, 5)}
    assert windows.get_state_window(TimeWindow(0, 5)) is None  # merged away: its timers are stale


def test_touching_windows_merge() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    windows.add_window(TimeWindow(0, 5), recorder)
    assert windows.add_window(TimeWindow(5, 10), recorder) == TimeWindow(0, 10)


def test_a_window_inside_a_session_changes_nothing() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    windows.add_window(TimeWindow(0, 10), recorder)
    assert windows.add_window(TimeWindow(2, 4), recorder) == TimeWindow(0, 10)
    assert recorder.calls == []
    assert windows.snapshot() == {TimeWindow(0, 10): TimeWindow(0, 10)}


def test_a_bridging_window_merges_two_sessions_and_names_both_state_windows() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    windows.add_window(TimeWindow(0, 5), recorder)
    windows.add_window(TimeWindow(3, 8), recorder)  # session [0, 8) on state [0, 5)
    windows.add_window(TimeWindow(20, 25), recorder)
    recorder.calls.clear()
    assert windows.add_window(TimeWindow(7, 21), recorder) == TimeWindow(0, 25)
    ((result, merged, state_window, merged_states),) = recorder.calls
    assert result == TimeWindow(0, 25)
    assert merged == [TimeWindow(0, 8), TimeWindow(20, 25)]
    assert state_window == TimeWindow(0, 5) and merged_states == [TimeWindow(20, 25)]
    assert windows.snapshot() == {TimeWindow(0, 25): TimeWindow(0, 5)}


def test_a_window_covering_a_session_exactly_becomes_the_result() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    windows.add_window(TimeWindow(2, 5), recorder)
    assert windows.add_window(TimeWindow(0, 10), recorder) == TimeWindow(0, 10)
    assert recorder.calls == [(TimeWindow(0, 10), [TimeWindow(2, 5)], TimeWindow(2, 5), [])]
    assert windows.snapshot() == {TimeWindow(0, 10): TimeWindow(2, 5)}


def test_adding_a_window_equal_to_a_merged_session_keeps_its_state_window() -> None:
    """With dynamic gaps a new window can equal a session built by merges; its state must not be dropped."""
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    windows.add_window(TimeWindow(0, 5), recorder)
    windows.add_window(TimeWindow(4, 10), recorder)
    recorder.calls.clear()
    assert windows.add_window(TimeWindow(0, 10), recorder) == TimeWindow(0, 10)
    assert recorder.calls == []
    assert windows.snapshot() == {TimeWindow(0, 10): TimeWindow(0, 5)}
    windows.add_window(TimeWindow(10, 12), recorder)
    assert windows.snapshot() == {TimeWindow(0, 12): TimeWindow(0, 5)}
    assert recorder.calls == [(TimeWindow(0, 12), [TimeWindow(0, 10)], TimeWindow(0, 5), [])]


def test_retire_window() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    windows.add_window(TimeWindow(0, 5), recorder)
    windows.add_window(TimeWindow(50, 55), recorder)
    windows.retire_window(TimeWindow(0, 5))
    assert windows.windows() == [TimeWindow(50, 55)] and len(windows) == 1
    assert TimeWindow(0, 5) not in windows and TimeWindow(50, 55) in windows
    with pytest.raises(StateError, match=r"TimeWindow\(start=0, end=5\) is not in the in-flight window set"):
        windows.retire_window(TimeWindow(0, 5))


def test_snapshot_restore_and_change_tracking() -> None:
    windows, recorder = MergingWindowSet(SESSIONS), Recorder()
    assert not windows.has_changed()
    windows.add_window(TimeWindow(0, 5), recorder)
    windows.add_window(TimeWindow(3, 9), recorder)
    assert windows.has_changed()
    stored = pickle.loads(pickle.dumps(windows.snapshot()))
    assert type(stored) is dict
    restored = MergingWindowSet(SESSIONS, stored)
    assert not restored.has_changed()
    assert restored.get_state_window(TimeWindow(0, 9)) == TimeWindow(0, 5)
    assert restored.add_window(TimeWindow(8, 12), recorder) == TimeWindow(0, 12)
    assert restored.has_changed()
    assert stored == {TimeWindow(0, 9): TimeWindow(0, 5)}  # the snapshot is a copy, not a view
    assert "TimeWindow(start=0, end=12): TimeWindow(start=0, end=5)" in repr(restored)


def test_merge_function_may_be_an_object_with_merge() -> None:
    class MergeFunction:
        def __init__(self) -> None:
            self.results: list = []

        def merge(self, merge_result: Any, merged: Any, state_window: Any, merged_states: Any) -> None:
            self.results.append(merge_result)

    function = MergeFunction()
    windows = MergingWindowSet(ProcessingTimeSessionWindows.with_gap(5))
    windows.add_window(TimeWindow(0, 5), function)
    windows.add_window(TimeWindow(4, 9), function)
    assert function.results == [TimeWindow(0, 9)]


class BrokenAssigner(MergingWindowAssigner):
    """Reports a merge of windows it was never given."""

    def assign_windows(self, element: Any, timestamp: Any, context: Any) -> list:
        return []

    def get_default_trigger(self, env: Any = None) -> Any:
        return None

    def is_event_time(self) -> bool:
        return True

    def merge_windows(self, windows: Any, callback: Any) -> None:
        callback.merge([TimeWindow(100, 101), TimeWindow(101, 102)], TimeWindow(100, 102))


def test_an_assigner_merging_unknown_windows_is_reported() -> None:
    with pytest.raises(StateError, match="merge_windows may only merge windows it was given"):
        MergingWindowSet(BrokenAssigner()).add_window(TimeWindow(0, 1), Recorder())


@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=40))
def test_random_sessions_stay_disjoint_cover_their_inputs_and_report_every_merge(
    spans: list[tuple[int, int]],
) -> None:
    windows = MergingWindowSet(SESSIONS)
    inputs: list[TimeWindow] = []
    for start, length in spans:
        new = TimeWindow(start, start + length)
        before = windows.snapshot()
        recorder = Recorder()
        result = windows.add_window(new, recorder)
        after = windows.snapshot()
        inputs.append(new)

        # the returned window is in flight and contains the new window
        assert result in after and result.start <= new.start and new.end <= result.end
        # every merge reports exactly the in-flight windows it swallowed, and their state windows
        swallowed: set[TimeWindow] = set()
        for merge_result, merged, state_window, merged_states in recorder.calls:
            assert set(merged) == {w for w in before if merge_result.start <= w.start and w.end <= merge_result.end}
            assert [before[w] for w in merged] == [state_window, *merged_states]
            assert after[merge_result] == state_window
            swallowed.update(merged)
        # nothing else changed: windows not merged keep their state window; merged ones are gone
        expected_keys = (set(before) - swallowed) | {call[0] for call in recorder.calls} | {result}
        assert set(after) == expected_keys
        for window in set(before) - swallowed:
            assert after.get(window, before[window]) == before[window]
        if not recorder.calls and result != new:
            assert after == before  # the new window fell inside a session

        # invariants over the whole set
        actual = sorted(after)
        for left, right in pairwise(actual):
            assert not left.intersects(right)  # disjoint and not even touching
        for window in actual:
            members = [w for w in inputs if window.start <= w.start and w.end <= window.end]
            assert window == TimeWindow(min(w.start for w in members), max(w.end for w in members))
            state_window = after[window]
            assert state_window in inputs and window.start <= state_window.start and state_window.end <= window.end
        for window in inputs:
            assert sum(1 for a in actual if a.start <= window.start and window.end <= a.end) == 1
        assert len(set(after.values())) == len(after)  # state windows are never shared
