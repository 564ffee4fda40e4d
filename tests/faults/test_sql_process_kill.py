"""SQL jobs are killed with SIGKILL mid-run (the client and its TaskManager processes) and run again from
their latest retained checkpoint. A window aggregation: over the committed files of both runs every window
appears exactly once with its exact count and sum (the accumulators of open windows and their event-time
timers are restored). A regular join: every id is joined exactly once (the rows each side keeps while it
waits for the other are restored; one lost would leave its id unjoined, one replayed would join it twice).
The datagen offsets come back with them; whatever the first run wrote after the checkpoint stays hidden."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fluvial.testing.faults import completed_checkpoints
from tests.faults.test_process_kill import kill_after_checkpoints

JOB = Path(__file__).with_name("sql_window_job.py")
N = 8_000  # ids 100k..100k+99 fall into the window starting at second k


def start(checkpoints: Path, out: Path, query: str = "window", restore: str | None = None) -> subprocess.Popen:
    args = [sys.executable, str(JOB), f"file://{checkpoints}", str(out), str(N), query] + ([restore] if restore else [])
    log = open(out.parent / f"{out.name}-{'restore' if restore else 'first'}.log", "wb")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=Path(__file__).parents[2])


def committed_lines(out: Path) -> list[list[str]]:
    return [
        line.split(",")
        for path in out.rglob("*")
        if path.is_file() and not path.name.startswith(".")
        for line in path.read_text().splitlines()
    ]


def kill_and_restore(tmp_path: Path, query: str) -> Path:
    checkpoints, out = tmp_path / "checkpoints", tmp_path / "out"
    first = start(checkpoints, out, query)
    try:
        kill_after_checkpoints(first, checkpoints, at_least=2)
    finally:
        if first.poll() is None:
            first.kill()
    assert not Path(f"{out}.done").exists()
    retained = completed_checkpoints(checkpoints)
    second = start(checkpoints, out, query, restore=f"file://{retained[max(retained)]}")
    try:
        assert second.wait(timeout=120) == 0, (out.parent / "out-restore.log").read_text()[-3000:]
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(timeout=10)
    return out


@pytest.mark.timeout(150)
def test_sigkill_mid_window_aggregation_then_restore(tmp_path):
    out = kill_and_restore(tmp_path, "window")
    windows = [(start, int(count), int(total)) for start, count, total in committed_lines(out)]
    starts = [w[0] for w in windows]
    assert len(starts) == len(set(starts)), "a window was written twice"
    expected = {}
    for i in range(1, N + 1):
        second_of = (i * 10) // 1000
        count, total = expected.get(second_of, (0, 0))
        expected[second_of] = (count + 1, total + i)
    actual = {int(start[17:19]) + 60 * int(start[14:16]): (count, total) for start, count, total in windows}
    assert actual == expected


@pytest.mark.timeout(150)
def test_sigkill_mid_join_then_restore(tmp_path):
    out = kill_and_restore(tmp_path, "join")
    pairs = sorted((int(a), int(b)) for a, b in committed_lines(out))
    assert pairs == [(i, 2 * i) for i in range(1, N + 1)]
