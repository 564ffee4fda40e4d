"""MergingWindowSet: one key's in-flight windows of a merging (session) assigner, Flink's bookkeeping.

Why two windows per session: when windows merge, the merged window's contents must live somewhere. Moving
state under a new namespace on every merge would copy it each time, so each *actual* window (what the user
sees: the session's current extent) maps to a *state window* (the namespace its contents live under, the
first window of the session). Merging repoints the result to one of the merged state windows and folds the
others into it. Trigger state and timers, by contrast, belong to the actual window.

The window operator keeps one set per key and uses it like this (Flink's WindowOperator):
1. for each window the assigner gives an element: `actual = set.add_window(window, merge_function)`;
   the merge function (called during add_window, before it returns) must, for the merge result:
   a. fail the job if an event-time result ends at or before the watermark minus lateness (a merge may not
      make a window late), b. run `trigger.on_merge(result, ctx)` with ctx.merge_partitioned_state folding
      trigger state of `merged_windows` into the result, c. `trigger.clear(w)` and delete the cleanup timer
      of each merged window, d. merge the contents of `merged_state_windows` into `state_window_result`;
2. if `actual` is late: `set.retire_window(actual)` and drop the element for it;
3. else add the element under `set.get_state_window(actual)`, call the trigger for `actual`, fire/purge;
4. on a timer for window w: `set.get_state_window(w)` is None when w was merged away - ignore the timer;
   at w's cleanup time, `set.retire_window(w)` after clearing its state;
5. when `has_changed()`, store `snapshot()` in the key's state (a plain dict, picklable, checkpointed with it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import (
    Any,
    Generic,
    Protocol,
    TypeVar,
)

from fluvial.common.errors import StateError
from fluvial.datastream.window_assigners import MergeCallback, MergingWindowAssigner

W = TypeVar("W")


class MergeFunction(Protocol[W]):
    """Told about each merge that `add_window` performed.

    `merged_windows`: the actual windows that disappear into `merge_result` (never the window being added,
    which had no state); `state_window_result`: the state window that now backs `merge_result`;
    `merged_state_windows`: the other state windows whose contents must be merged into it (may be empty).
    """

    def __call__(
        self, merge_result: W, merged_windows: list[W], state_window_result: W, merged_state_windows: list[W]
    ) -> None: ...


class _CollectingCallback(MergeCallback):
    """Records what the assigner wants merged; the set applies it afterwards, in the reported order."""

    __slots__ = ("merges",)

    def __init__(self) -> None:
        self.merges: list[tuple[list, Any]] = []

    def merge(self, to_be_merged: Iterable, merge_result: Any) -> None:
        self.merges.append((list(to_be_merged), merge_result))

    __call__ = merge


class MergingWindowSet(Generic[W]):
    """Maps each actual window of one key to its state window. Not thread-safe: the task thread owns it."""

    __slots__ = ("_assigner", "_mapping", "_initial")

    def __init__(self, assigner: MergingWindowAssigner, state: Mapping[W, W] | None = None) -> None:
        """`state` is a previous `snapshot()` (from keyed state or a checkpoint); None or {} for a new key."""
        self._assigner = assigner
        self._mapping: dict[W, W] = dict(state) if state else {}
        self._initial: dict[W, W] = dict(self._mapping)

    def get_state_window(self, window: W) -> W | None:
        """The state window backing actual window `window`, or None when it is not in flight (merged away)."""
        return self._mapping.get(window)

    def retire_window(self, window: W) -> None:
        """Forget `window` (it was purged for good, or was late on arrival). Its state is the caller's to clear."""
        if self._mapping.pop(window, None) is None:
            raise StateError(
                f"window {window!r} is not in the in-flight window set {list(self._mapping)!r}: "
                "retire only a window returned by add_window and not retired or merged away since"
            )

    def add_window(self, new_window: W, merge_function: MergeFunction[W] | Callable[..., None]) -> W:
        """Add `new_window`, merge it with the in-flight windows it touches, and return the actual window it
        now belongs to (itself, or the merge result containing it).

        `merge_function` is called once per merge, before this returns (see MergeFunction). It is not called
        when the new window falls inside an existing window, which then is returned unchanged.
        """
        mapping = self._mapping
        candidates = list(mapping)
        if new_window not in mapping:
            candidates.append(new_window)
        collector = _CollectingCallback()
        self._assigner.merge_windows(candidates, collector)
        report = _merge_reporter(merge_function)

        result_window = new_window
        for merged, merge_result in collector.merges:
            if new_window in merged:
                result_window = merge_result
            existing = [window for window in merged if window in mapping]
            if not existing:
                raise StateError(
                    f"{self._assigner!r} merged {merged!r} into {merge_result!r}, but none of them is in flight: "
                    "merge_windows may only merge windows it was given"
                )
            state_windows = [mapping.pop(window) for window in existing]
            mapping[merge_result] = state_windows[0]
            if len(existing) == 1 and existing[0] == merge_result:
                continue  # the new window fell inside an existing one: nothing changed
            report(merge_result, existing, state_windows[0], state_windows[1:])

        if result_window == new_window and new_window not in mapping:
            mapping[new_window] = new_window
        return result_window

    def snapshot(self) -> dict[W, W]:
        """A copy of actual window -> state window, to store in keyed state or a checkpoint."""
        return dict(self._mapping)

    def has_changed(self) -> bool:
        """True when the mapping differs from the one the set was built from (then store `snapshot()`)."""
        return self._mapping != self._initial

    def windows(self) -> list[W]:
        """The actual windows in flight."""
        return list(self._mapping)

    def __contains__(self, window: object) -> bool:
        return window in self._mapping

    def __iter__(self) -> Iterator[W]:
        return iter(list(self._mapping))

    def __len__(self) -> int:
        return len(self._mapping)

    def __repr__(self) -> str:
        pairs = ", ".join(f"{actual!r}: {state!r}" for actual, state in self._mapping.items())
        return f"MergingWindowSet({{{pairs}}})"


def _merge_reporter(merge_function: Any) -> Callable[..., None]:
    merge = getattr(merge_function, "merge", None)
    if callable(merge):
        return merge
    if callable(merge_function):
        return merge_function
    raise StateError(
        f"add_window needs a merge function (merge_result, merged_windows, state_window_result, "
        f"merged_state_windows) -> None, got {merge_function!r}"
    )
