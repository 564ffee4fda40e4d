"""How `fluvial run -m HOST:PORT JOB.py` shows the jobs it waits for, on stderr (stdout stays the program's).

On a terminal: a live table (rich) per job — its state, how long it has run, its checkpoints, and each vertex
with its state and the records it read and wrote — redrawn at every poll of the cluster, left on the screen when
the job ends. Anywhere else (a pipe, a file, CI): one plain line whenever a job changes state, and a last line
with its figures when it ends. A job that waits for task slots says what it waits on (in its table's title, or
in a line every few seconds).

One ConsoleProgress serves every job of a run (rich allows one live display at a time); it is the
ProgressListener of each job's RemoteJobClient and is called on their watcher threads.
"""

from __future__ import annotations

import datetime
import sys
import threading
import time
from typing import IO, Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from fluvial.cluster.session.remote_job_client import WAIT_REPORT_SECONDS, JobProgress

STATE_STYLES = {
    "RUNNING": "green",
    "FINISHED": "bold green",
    "FAILED": "bold red",
    "FAILING": "red",
    "CANCELED": "yellow",
    "CANCELLING": "yellow",
    "RESTARTING": "magenta",
    "CREATED": "cyan",
}


class ConsoleProgress:
    def __init__(self, stream: IO[str] | None = None, terminal: bool | None = None) -> None:
        """`terminal`: draw the live table (True) or write lines (False); None: whichever `stream` calls for."""
        self._stream = stream or sys.stderr
        self._console = Console(file=self._stream, highlight=False, force_terminal=terminal)
        self._live_mode = self._console.is_terminal
        self._lock = threading.Lock()
        self._jobs: dict[str, JobProgress] = {}  # the latest figures of each job, in the order they started
        self._ended: set[str] = set()
        self._live: Live | None = None
        self._wait_lines: dict[str, float] = {}  # job -> when its last "waiting for slots" line was written

    # -- ProgressListener ----------------------------------------------------------------------------------------

    def progress(self, progress: JobProgress) -> None:
        with self._lock:
            previous = self._jobs.get(progress.job_id)
            self._jobs[progress.job_id] = progress
            if self._live_mode:
                self._redraw()
            elif progress.waiting_for_slots:
                last = self._wait_lines.get(progress.job_id)
                if last is None or time.monotonic() - last >= WAIT_REPORT_SECONDS:
                    self._wait_lines[progress.job_id] = time.monotonic()
                    self._line(progress, f"is {progress.state}, {progress.waiting_for_slots}")
            elif previous is None or previous.state != progress.state:
                self._line(progress, f"is {progress.state}")

    def finished(self, progress: JobProgress) -> None:
        with self._lock:
            self._jobs[progress.job_id] = progress
            self._ended.add(progress.job_id)
            if self._live_mode:
                self._redraw()
                if self._ended >= set(self._jobs) and self._live is not None:
                    self._live.stop()
                    self._live = None
                    self._jobs.clear()
                    self._ended.clear()
            else:
                self._line(
                    progress, f"ended {progress.state} after {_duration(progress.duration_ms)}: {_figures(progress)}"
                )

    # -- rendering --------------------------------------------------------------------------------------------------

    def _redraw(self) -> None:
        view = Group(*(_job_table(progress) for progress in self._jobs.values()))
        if self._live is None:
            self._live = Live(
                view,
                console=self._console,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
                transient=False,
            )
            self._live.start(refresh=True)
        else:
            self._live.update(view, refresh=True)

    def _line(self, progress: JobProgress, what: str) -> None:
        now = datetime.datetime.now().strftime("%H:%M:%S")
        self._stream.write(f"{now} Job {progress.name} ({progress.job_id}) {what}\n")
        self._stream.flush()


def _job_table(progress: JobProgress) -> Table:
    state = Text(progress.state, style=STATE_STYLES.get(progress.state, ""))
    title = Text.assemble(
        f"{progress.name} ",
        (progress.job_id, "dim"),
        "  ",
        state,
        f"  {_duration(progress.duration_ms)}  checkpoints: {progress.checkpoints_completed} "
        f"completed, {progress.checkpoints_failed} failed, {progress.checkpoints_in_progress} in "
        "progress",
        *((f"\n{progress.waiting_for_slots}",) if progress.waiting_for_slots else ()),
    )
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("vertex")
    table.add_column("parallelism", justify="right")
    table.add_column("state")
    table.add_column("records in", justify="right")
    table.add_column("records out", justify="right")
    for vertex in progress.vertices:
        status = Text(vertex.status, style=STATE_STYLES.get(vertex.status, ""))
        table.add_row(vertex.name, str(vertex.parallelism), status, f"{vertex.records_in:,}", f"{vertex.records_out:,}")
    return table


def _figures(progress: JobProgress) -> str:
    vertices = "; ".join(f"{v.name}: {v.records_in:,} in, {v.records_out:,} out" for v in progress.vertices)
    return f"{vertices}; checkpoints {progress.checkpoints_completed} completed, {progress.checkpoints_failed} failed"


def _duration(milliseconds: Any) -> str:
    seconds = max(0, int(milliseconds)) / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"
