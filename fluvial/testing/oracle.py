"""The exactly-once oracle over a FileSink's committed output.

A FileSink makes a part file visible only when the checkpoint covering it completes (or, at the very end, the
final checkpoint): in-progress and pending files are hidden (their names start with a dot). So the visible
files are what the job committed, and for a job that processes and writes exactly once they hold every record
of its input exactly once. Over `key|seq|verdict` lines of a SequenceVerifier:
- lost: (key, seq) pairs of the input that no committed line holds;
- duplicated: extra commits of a pair (the sink wrote it twice), plus pairs committed once but judged
  `duplicated` (the verifier's state had seen it in an attempt whose output was rolled back: the state and the
  source did not rewind together);
- out-of-order: lines the verifier judged `out-of-order`.
All three are 0 for a correct run, whatever failed during it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fluvial.testing.sequences import DUPLICATED, OUT_OF_ORDER


@dataclass(frozen=True, slots=True)
class ExactlyOnceReport:
    """What the exactly-once oracle found in a FileSink's committed output: expected and committed records,
    lost, duplicated and out-of-order ones, and hidden (uncommitted) part files.
    """

    expected: int
    committed: int
    lost: int
    duplicated: int
    out_of_order: int
    hidden_files: int  # in-progress or pending part files (uncommitted; never counted)

    @property
    def exactly_once(self) -> bool:
        """Whether nothing was lost, duplicated or out of order."""
        return self.lost == 0 and self.duplicated == 0 and self.out_of_order == 0

    def __str__(self) -> str:
        return (
            f"{self.committed}/{self.expected} committed: {self.lost} lost, {self.duplicated} duplicated, "
            f"{self.out_of_order} out of order"
        )


def committed_lines(directory: str | os.PathLike[str]) -> tuple[list[str], int]:
    """(every line of every visible part file under `directory`, how many files are hidden)."""
    lines: list[str] = []
    hidden = 0
    for root, _, names in os.walk(directory):
        for name in names:
            if name.startswith("."):
                hidden += 1
                continue
            lines.extend(Path(root, name).read_text(encoding="utf-8").splitlines())
    return lines, hidden


def verify_sequences(directory: str | os.PathLike[str], keys: int, per_key: int) -> ExactlyOnceReport:
    """Judge the committed `key|seq|verdict` lines under `directory` against the input of `keys` keys with
    `per_key` records each (module docstring)."""
    lines, hidden = committed_lines(directory)
    pairs: dict[tuple[int, int], list[str]] = {}
    for line in lines:
        key, seq, verdict = line.split("|")
        pairs.setdefault((int(key), int(seq)), []).append(verdict)
    expected = keys * per_key
    present = sum(1 for key, seq in pairs if 0 <= key < keys and 0 <= seq < per_key)
    duplicated = sum(len(verdicts) - 1 + (verdicts == [DUPLICATED]) for verdicts in pairs.values())
    out_of_order = sum(verdicts.count(OUT_OF_ORDER) for verdicts in pairs.values())
    return ExactlyOnceReport(expected, len(lines), expected - present, duplicated, out_of_order, hidden)
