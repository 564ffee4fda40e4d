"""The changelog state backend under a real fault: a process-mode job whose keyed state is logged (segments as
files under the DSTL base path, a materialization every 100 ms) has a TaskManager process SIGKILLed mid-run, fails
over from its latest checkpoint — a materialization plus the log after it, replayed (the TaskManagers' logs say
so) — and its committed output is exactly once: every number once, each key's counts 1, 2, 3, ... in order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.faults.test_process_kill import assert_exactly_once, committed_records
from tests.faults.test_taskmanager_processes import (
    checkpointed_job,
    kill_a_task_manager_after_checkpoints,
    process_environment,
)


@pytest.mark.timeout(120)
def test_a_task_manager_killed_mid_job_with_the_changelog_backend_fails_over_exactly_once(tmp_path: Path) -> None:
    n = 40_000
    dstl = tmp_path / "dstl"
    env = process_environment(
        **{
            "state.changelog.enabled": "true",
            "state.changelog.storage": "filesystem",
            "state.changelog.dstl.dfs.base-path": str(dstl),
            "state.changelog.periodic-materialize.interval": "100 ms",
            "env.log.dir": str(tmp_path / "log"),
        }
    )
    client = checkpointed_job(tmp_path, n, "hashmap", restarts=True, env=env).execute_async("changelog failover")
    kill_a_task_manager_after_checkpoints(client, tmp_path / "chk", at_least=4)
    segments = [path for path in dstl.rglob("*") if path.is_file()]
    client.get_job_execution_result().result(timeout=100)
    assert client._job_master.restarts == 1
    assert segments, "no changelog segment was written under the DSTL base path"
    records, _ = committed_records(tmp_path / "out")
    assert_exactly_once(records, n)
    logs = "".join(path.read_text(errors="replace") for path in (tmp_path / "log").rglob("*") if path.is_file())
    restores = re.findall(r"restored (\d+) materialization\(s\) and 0 snapshot\(s\), replayed (\d+) change", logs)
    assert restores, "no TaskManager logged restoring its keyed state from the changelog"
    assert all(int(materializations) == 1 for materializations, _ in restores), restores
    assert any(int(changes) > 0 for _, changes in restores), restores
