"""The seeded fault driver on the real fault job (each trial runs the job in a process of its own): every
kind of fault it can inject here, then the exactly-once oracle over the committed output. `bench/soak.py`
runs many such trials for the figures in docs/operations/reliability.md; these keep the harness itself honest."""

from __future__ import annotations

import pytest

from fluvial.testing.faults import FaultKind, FaultUnavailable, TrialSettings, run_trial

SMALL = TrialSettings(keys=10, per_key=500, rate=2500)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend,mode", [("hashmap", "thread"), ("rocksdb", "thread"), ("hashmap", "process")])
def test_kills_and_user_exceptions_lose_and_duplicate_nothing(tmp_path, backend, mode):
    settings = TrialSettings(SMALL.keys, SMALL.per_key, SMALL.rate, backend=backend, mode=mode)
    result = run_trial(tmp_path / "trial", 1, [FaultKind.KILL, FaultKind.RAISE, FaultKind.KILL], settings)
    assert result.faults == {FaultKind.KILL: 2, FaultKind.RAISE: 1}
    assert result.passed, f"{result.outcome}: {result.report}"
    assert result.report.committed == SMALL.keys * SMALL.per_key
    assert len(result.recovery_ms) == 3
    assert result.left_nothing, (result.left_running, result.left_on_disk)  # no process, directory, hidden part


@pytest.mark.timeout(120)
def test_a_full_disk_and_an_unwritable_directory_lose_and_duplicate_nothing(tmp_path):
    try:
        result = run_trial(tmp_path / "trial", 2, [FaultKind.FILL_DISK, FaultKind.UNWRITABLE], SMALL)
    except FaultUnavailable as missing:
        pytest.skip(str(missing))
    assert result.passed, f"{result.outcome}: {result.report}"


@pytest.mark.timeout(120)
def test_a_corrupt_checkpoint_fails_the_job_at_once_naming_the_file(tmp_path):
    result = run_trial(tmp_path / "trial", 3, [FaultKind.CORRUPT], SMALL)
    assert result.outcome.startswith("failed as expected"), result.outcome
    assert result.passed and result.report.duplicated == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_task_manager_processes_killed_mid_job_lose_and_duplicate_nothing(tmp_path, backend):
    settings = TrialSettings(SMALL.keys, SMALL.per_key, SMALL.rate, backend=backend, mode="process")  # the job
    # lasts until both kills are done (the trial holds its source at its end until then)
    result = run_trial(tmp_path / "trial", 5, [FaultKind.KILL_TASKMANAGER, FaultKind.KILL_TASKMANAGER], settings)
    assert result.left_nothing, (result.left_running, result.left_on_disk)
    assert result.faults == {FaultKind.KILL_TASKMANAGER: 2}
    assert result.passed, f"{result.outcome}: {result.report}"
    assert result.report.committed == SMALL.keys * SMALL.per_key


@pytest.mark.timeout(30)
def test_killing_a_task_manager_process_needs_process_mode(tmp_path):
    with pytest.raises(FaultUnavailable, match="process mode"):
        run_trial(tmp_path / "trial", 4, [FaultKind.KILL_TASKMANAGER], SMALL)
