"""A checkpointed job in its own process is killed with SIGKILL mid-run — no shutdown, no final commit, files
half written — and run again from its latest retained checkpoint (a chk-<n> directory is restorable like a
savepoint). Over the committed part files of both runs, every number appears exactly once and each key's
counts are 1, 2, 3, ... in the order of its records: the exactly-once oracle across a real crash. At
parallelism 2 the job's TaskManagers are processes of their own (the default, auto): they must end with the
killed client, before the second run starts.

Why it holds: part files become visible only when the checkpoint covering them completes (or, for a
checkpoint that completed just before the kill, when the restored job re-commits its recorded committables);
whatever the first process wrote after its latest completed checkpoint stays hidden and is replayed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import wait_until
from fluvial.testing.faults import completed_checkpoints
from tests.processes import alive, descendants

JOB = Path(__file__).with_name("checkpointed_job.py")
KEYS = 7


def start_job(
    checkpoints: Path, out: Path, parallelism: int, n: int, threshold: int, backend: str, restore: str | None = None
) -> subprocess.Popen:
    args = [
        sys.executable,
        str(JOB),
        f"file://{checkpoints}",
        str(out),
        str(parallelism),
        str(n),
        str(threshold),
        backend,
    ]
    if restore:
        args.append(restore)
    log = open(out.parent / f"{out.name}-{'restore' if restore else 'first'}.log", "wb")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=Path(__file__).parents[2])


def kill_after_checkpoints(process: subprocess.Popen, checkpoints: Path, at_least: int, timeout: float = 60) -> None:
    """SIGKILL the job's process once `at_least` checkpoints completed, and wait until every process it started
    (its TaskManager processes in process mode) has ended too: none may write on after their client died."""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, f"the job ended (exit {process.returncode}) before it was killed"
        assert time.monotonic() < deadline, f"fewer than {at_least} checkpoints completed within {timeout} s"
        done = completed_checkpoints(checkpoints)
        if done and max(done) >= at_least:
            break
        time.sleep(0.005)
    family = descendants(process.pid)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    wait_until(
        lambda: not any(alive(pid) for pid in family),
        timeout=20,
        what=f"every process of the killed job to end ({sorted(family)})",
    )


def committed_records(out: Path) -> tuple[list[tuple[tuple[int, int], int, int]], list[Path]]:
    records, hidden = [], []
    for path in out.rglob("*"):
        if path.is_dir():
            continue
        if path.name.startswith("."):
            hidden.append(path)
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            subtask, residue, seq, count = (int(part) for part in line.split("|"))
            records.append(((subtask, residue), seq, count))
    return records, hidden


def assert_exactly_once(records, n: int) -> None:
    seqs = sorted(seq for _, seq, _ in records)
    missing = sorted(set(range(1, n + 1)) - set(seqs))
    assert not missing, f"{len(missing)} records lost, first {missing[:10]}"
    duplicates = [s for i, s in enumerate(seqs) if i and seqs[i - 1] == s]
    assert not duplicates, f"{len(duplicates)} records duplicated, first {duplicates[:10]}"
    by_key = defaultdict(list)
    for key, seq, count in records:
        by_key[key].append((seq, count))
    for key, items in by_key.items():
        items.sort()
        wrong = [(seq, count, i) for i, (seq, count) in enumerate(items, 1) if count != i]
        assert not wrong, f"key {key}: (seq, count, expected) {wrong[:5]}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
@pytest.mark.parametrize("parallelism, threshold", [(1, 20 * 1024), (2, 0)], ids=["p1-inline-state", "p2-state-files"])
def test_sigkill_mid_run_then_restore_from_the_latest_retained_checkpoint(tmp_path, parallelism, threshold, backend):
    n = 30_000
    checkpoints, out = tmp_path / "checkpoints", tmp_path / "out"
    first = start_job(checkpoints, out, parallelism, n, threshold, backend)
    try:
        kill_after_checkpoints(first, checkpoints, at_least=3)
    finally:
        if first.poll() is None:
            first.kill()
    assert not Path(f"{out}.done").exists()
    before, _ = committed_records(out)
    assert len(before) < n, "the first run committed everything: it was not killed mid-run"

    retained = completed_checkpoints(checkpoints)
    latest_id = max(retained)
    restore = f"file://{retained[latest_id]}"
    second = start_job(checkpoints, out, parallelism, n, threshold, backend, restore=restore)
    try:
        assert second.wait(timeout=90) == 0, (out.parent / "out-restore.log").read_text()[-3000:]
    finally:
        if second.poll() is None:
            second.kill()  # never leave a hung job process behind
            second.wait(timeout=10)
    assert Path(f"{out}.done").exists()

    records, _ = committed_records(out)
    assert_exactly_once(records, n)
    # the second run resumed from the checkpoint instead of starting over: some subtask's first number lies past
    # the start of its split
    starts = [split.current for split in NumberSequenceSource(1, n).create_splits(parallelism)]
    resumed = [tuple(map(int, line.split())) for line in Path(f"{out}.first-seen-restored").read_text().splitlines()]
    assert any(value > starts[subtask] for subtask, value in resumed), resumed
