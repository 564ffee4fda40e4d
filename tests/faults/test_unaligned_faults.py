"""Exactly-once with unaligned checkpoints (issue 19): the fault job's verifying task is paced below its
sources' rate, so its input channels stay full and every checkpoint carries in-flight data. Injected exceptions
(failover from the latest checkpoint), SIGKILL of the job's process (a new run restored from the latest
retained unaligned checkpoint, at the same parallelism) and SIGKILL of a TaskManager process (process mode),
on both state backends: the per-key sequence oracle finds nothing lost, duplicated or out of order.
`python -m bench.soak --unaligned` runs many more trials."""

from __future__ import annotations

import pytest

from fluvial.testing.faults import FaultKind, TrialSettings, run_trial

UNALIGNED = dict(keys=10, per_key=600, rate=3000, unaligned=True, pace_us=800)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "backend,mode,plan",
    [
        ("hashmap", "thread", [FaultKind.RAISE, FaultKind.KILL]),
        ("rocksdb", "process", [FaultKind.KILL_TASKMANAGER, FaultKind.RAISE]),
    ],
)
def test_faults_while_in_flight_data_is_persisted_lose_and_duplicate_nothing(tmp_path, backend, mode, plan):
    settings = TrialSettings(backend=backend, mode=mode, **UNALIGNED)
    result = run_trial(tmp_path / "trial", 11, plan, settings)
    assert result.passed, f"{result.outcome}: {result.report}"
    assert result.report.committed == settings.keys * settings.per_key
    assert any(size > 0 for size in result.in_flight_bytes), result.in_flight_bytes
