"""ScriptedSource: a source that plays a script — records, and markers that pause it, crash it once, or end it —
so a test puts a job exactly where it wants it: mid-stream for a savepoint, failing after record n, paused
until the test has looked. Markers are files, so they work whatever process runs the source.

    script = [1, 2, 3, Pause(str(tmp_path / "go")), 4, Crash(str(tmp_path / "crashed")), 5, End()]
    env.from_source(ScriptedSource(script)).map(...)

Its position is checkpointed: a restored source resumes with the first record the checkpoint did not cover.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader


@dataclass(frozen=True)
class Pause:
    """Emit nothing until `release_file` exists (the test creates it)."""

    release_file: str


@dataclass(frozen=True)
class Crash:
    """Fail the source once: the first attempt that reaches it creates `marker_file` and raises; later attempts
    (after a restart) find the file and go on."""

    marker_file: str
    message: str = "scripted crash"


@dataclass(frozen=True)
class End:
    """End of input here; the rest of the script is never read."""


class ScriptCrash(RuntimeError):
    """What a Crash marker raises."""


@dataclass(frozen=True)
class ScriptSplit:
    split_id: str
    position: int = 0  # index of the next script item


class ScriptedSource(Source[ScriptSplit]):
    """A source that plays a script: records, and markers to pause, crash or end (see
    [Testing your jobs](../testing.md)).
    """

    def __init__(self, script: list, unbounded: bool = False) -> None:
        """`unbounded`: after the script, emit nothing and never end (a job that runs until cancelled)."""
        self.script = list(script)
        self.unbounded = unbounded

    def get_boundedness(self) -> Boundedness:
        """BOUNDED, or CONTINUOUS_UNBOUNDED for a script that never ends."""
        return Boundedness.CONTINUOUS_UNBOUNDED if self.unbounded else Boundedness.BOUNDED

    def create_splits(self, parallelism: int) -> list[ScriptSplit]:
        """The source's splits.

        Args:
            parallelism: The source's parallelism.

        Returns:
            The splits.
        """
        return [ScriptSplit("script")]

    def create_reader(self, task_info: Any) -> ScriptReader:
        """The reader of one source subtask.

        Args:
            task_info: The subtask.

        Returns:
            The SourceReader.
        """
        return ScriptReader(self.script, self.unbounded)

    def max_parallelism(self) -> int:
        """1: a script is read by one subtask."""
        return 1

    def default_name(self) -> str:
        """The source's name when none is given."""
        return "Scripted Source"


class ScriptReader(SourceReader[ScriptSplit]):
    def __init__(self, script: list, unbounded: bool) -> None:
        self._script = script
        self._unbounded = unbounded
        self._split: ScriptSplit | None = None

    def add_splits(self, splits: list[ScriptSplit]) -> None:
        if splits:
            self._split = splits[0]

    def poll(self, max_records: int) -> list | None:
        split = self._split
        if split is None:
            return None
        out: list = []
        position = split.position
        while position < len(self._script) and len(out) < max_records:
            item = self._script[position]
            if isinstance(item, Pause):
                if not os.path.exists(item.release_file):
                    break
            elif isinstance(item, Crash):
                if out:
                    break  # emit what came before the crash first
                if not os.path.exists(item.marker_file):
                    open(item.marker_file, "w").close()
                    self._split = replace(split, position=position + 1)
                    raise ScriptCrash(item.message)
            elif isinstance(item, End):
                position = len(self._script)
                break
            else:
                out.append(item)
            position += 1
        self._split = replace(split, position=position)
        if not out and position >= len(self._script):
            return [] if self._unbounded else None
        return out

    def snapshot_state(self) -> list[ScriptSplit]:
        return [self._split] if self._split is not None else []
