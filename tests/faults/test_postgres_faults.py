"""The PostgreSQL connectors under real faults (`fluvial.testing.postgres_trials`): a TaskManager process
SIGKILLed mid-job and the server restarted mid-job, judged by the per-key sequence oracle over what the database
holds — the exactly-once JDBC sink and the CDC source feeding it: nothing lost, nothing twice, per-key order
kept. The soak (`python -m bench.postgres_soak`) runs these trials and the at-least-once sink's many times."""

from __future__ import annotations

import pytest

from fluvial.testing.postgres_trials import PgFault, run_cdc_trial, run_jdbc_trial

KILL, RESTART = PgFault.KILL_TASKMANAGER, PgFault.RESTART_SERVER


def assert_passed(result) -> None:
    assert result.passed, (
        f"{result.connector} seed {result.seed}: {result.outcome}; {result.lost} lost, "
        f"{result.duplicated} duplicated, {result.out_of_order} out of order of {result.expected}"
    )
    assert result.restarts >= 1


@pytest.mark.timeout(150)
def test_the_exactly_once_jdbc_sink_across_a_killed_task_manager_and_a_server_restart(postgres, tmp_path):
    assert_passed(run_jdbc_trial(postgres, tmp_path, seed=1, faults=[KILL, RESTART]))


@pytest.mark.timeout(180)
def test_change_capture_into_the_exactly_once_sink_across_a_killed_task_manager_and_a_server_restart(
    postgres, tmp_path
):
    assert_passed(run_cdc_trial(postgres, tmp_path, seed=3, faults=[KILL, RESTART]))
