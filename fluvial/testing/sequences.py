"""Per-key sequences and the operator that verifies them (what Flink's exactly-once ITCases run).

KeySequenceSource emits `(key, seq)` for every key, seq = 0, 1, 2, ... in order per key. Keyed by `key`, each
key's records reach one subtask of the next keyed operator in that order, whatever fails in between, if the
job processes exactly once. SequenceVerifier is that operator: it keeps, per key in keyed state, the sequence
number it expects next, and judges every record:
- `ok`: the expected one;
- `duplicated`: one it saw already (seq below the expected one: a replay its state did not rewind with);
- `out-of-order`: one past the expected one (the records between were skipped: lost, so far).
It emits one line per record, `key|seq|verdict` — written through an exactly-once sink, the committed lines are
the judgement of the one consistent execution the job's checkpoints make of all its attempts
(`fluvial.testing.oracle` reads them).

The source paces itself (`records_per_second`) without ever blocking its task's thread, so faults land
mid-stream; its position is checkpointed like any split's, so a restored source resumes at the first record
the checkpoint did not cover. With `hold_until` (a path), a reader that has emitted all it has waits at its end,
emitting nothing but still taking part in checkpoints, until that file exists: a fault trial's job then lasts
until the trial has injected every planned fault, however slowly a loaded machine runs it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.datastream.functions import KeyedProcessFunction
from fluvial.datastream.state import ValueStateDescriptor

OK, DUPLICATED, OUT_OF_ORDER = "ok", "duplicated", "out-of-order"


@dataclass(frozen=True)
class KeySequenceSplit:
    """Keys `first_key`, `first_key + 1`, ... (`key_count` of them), each up to `per_key` records; `next` is
    the index of the next record in the split's round-robin order (key = first + next % count)."""

    split_id: str
    first_key: int
    key_count: int
    per_key: int
    next: int = 0

    @property
    def size(self) -> int:
        return self.key_count * self.per_key


@dataclass(frozen=True)
class KeySequenceSource(Source[KeySequenceSplit]):
    """`keys` keys, `per_key` records each, as (key, seq); at most `records_per_second` per subtask (0: as fast
    as it can). Bounded; with `hold_until`, it ends only once that file exists (module docstring)."""

    keys: int
    per_key: int
    records_per_second: int = 0
    hold_until: str | None = None

    def __post_init__(self) -> None:
        if self.keys < 1 or self.per_key < 1 or self.records_per_second < 0:
            raise InvalidJobError(
                f"KeySequenceSource needs keys >= 1, per_key >= 1 and records_per_second >= 0, "
                f"got {self.keys}, {self.per_key}, {self.records_per_second}"
            )

    def get_boundedness(self) -> Boundedness:
        """BOUNDED, or CONTINUOUS_UNBOUNDED for a script that never ends."""
        return Boundedness.BOUNDED

    def create_splits(self, parallelism: int) -> list[KeySequenceSplit]:
        """The source's splits.

        Args:
            parallelism: The source's parallelism.

        Returns:
            The splits.
        """
        count = min(parallelism, self.keys)
        base, extra = divmod(self.keys, count)
        splits, first = [], 0
        for i in range(count):
            size = base + (1 if i < extra else 0)
            splits.append(KeySequenceSplit(str(i), first, size, self.per_key))
            first += size
        return splits

    def create_reader(self, task_info: Any) -> KeySequenceReader:
        """The reader of one source subtask.

        Args:
            task_info: The subtask.

        Returns:
            The SourceReader.
        """
        return KeySequenceReader(self.records_per_second, self.hold_until)

    def default_name(self) -> str:
        """The source's name when none is given."""
        return "Key Sequences"


class KeySequenceReader(SourceReader[KeySequenceSplit]):
    def __init__(self, records_per_second: int, hold_until: str | None = None) -> None:
        self._splits: list[KeySequenceSplit] = []
        self._rate = records_per_second
        self._hold_until = hold_until
        self._started: float | None = None
        self._emitted = 0

    def add_splits(self, splits: list[KeySequenceSplit]) -> None:
        self._splits.extend(splits)

    def _allowed(self, max_records: int) -> int:
        if not self._rate:
            return max_records
        now = time.monotonic()
        if self._started is None:
            self._started = now
        return max(0, min(max_records, int((now - self._started) * self._rate) + 1 - self._emitted))

    def poll(self, max_records: int) -> list | None:
        while self._splits and self._splits[0].next >= self._splits[0].size:
            self._splits.pop(0)
        if not self._splits:
            if self._hold_until is not None and not os.path.exists(self._hold_until):
                return []  # held at its end (restored ones too: a checkpoint after the end has no split left)
            return None
        split = self._splits[0]
        count = min(self._allowed(max_records), split.size - split.next)
        keys, first = split.key_count, split.first_key
        records = [(first + i % keys, i // keys) for i in range(split.next, split.next + count)]
        self._splits[0] = replace(split, next=split.next + count)
        self._emitted += count
        return records

    def snapshot_state(self) -> list[KeySequenceSplit]:
        return list(self._splits)


class SequenceVerifier(KeyedProcessFunction):
    """Judges each (key, seq) against the key's expected next number (module docstring); emits
    `key|seq|verdict` lines."""

    def open(self, runtime_context: Any) -> None:
        """Create the per-key expected-sequence state.

        Args:
            runtime_context: The function's runtime context.
        """
        self.expected = runtime_context.get_state(ValueStateDescriptor("expected-seq", None))

    def process_element(self, value: Any, ctx: Any):
        """Judge one (key, seq) against the key's expected next number and emit its `key|seq|verdict` line.

        Args:
            value: The (key, seq) record.
            ctx: The function's context.
        """
        key, seq = value
        expected = self.expected.value() or 0
        if seq == expected:
            verdict = OK
        elif seq < expected:
            verdict = DUPLICATED
        else:
            verdict = OUT_OF_ORDER
        if seq >= expected:
            self.expected.update(seq + 1)
        yield f"{key}|{seq}|{verdict}"
