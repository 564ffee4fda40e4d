"""The session cluster commands, in this process, where no cluster needs to run: usage errors name the fix, a
recorded live cluster is never started twice, a stale cluster file is cleaned with a note, an address nobody
answers at says so, and the progress display shows a job's state, records and checkpoints."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys

import pytest

from fluvial.cli.progress import ConsoleProgress
from fluvial.cluster.session.cluster_file import (
    ClusterRecord,
    ProcessRecord,
    cluster_file_path,
    read_cluster_file,
    write_cluster_file,
)
from fluvial.cluster.session.remote_job_client import JobProgress, VertexProgress
from services.server import refusing_port
from tests.unit.cli.helpers import invoke, job_file

TINY = "env.from_collection([1]).print()\nenv.execute('tiny')\n"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLUVIAL_TOKEN", raising=False)
    return tmp_path / "home"


CLUSTER_ID = "c1" * 16


def recorded(jobmanager: ProcessRecord, taskmanagers: tuple[ProcessRecord, ...] = ()) -> ClusterRecord:
    record = ClusterRecord(
        "127.0.0.1:1", "http://127.0.0.1:1", "token", jobmanager, taskmanagers, cluster_id=CLUSTER_ID
    )
    write_cluster_file(record)
    return record


def sleeper(cluster_id: str | None = None) -> subprocess.Popen:
    """A process that sleeps; started as a process of the cluster `cluster_id` when one is given."""
    env = {**os.environ, "FLUVIAL_CLUSTER_ID": cluster_id} if cluster_id else None
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-d"], "-d (--detached) submits each job and leaves it running, on a session cluster (add -m HOST:PORT"),
        (["-m", "localhost:8081", "--web"], "--web serves the dashboard of an embedded job"),
        (["-m", "nowhere"], "-m: 'nowhere' is not an address of a cluster's REST API: give HOST:PORT"),
    ],
)
def test_run_options_that_cannot_go_together_are_usage_errors(tmp_path, options, message):
    result = invoke("run", *options, job_file(tmp_path, TINY))
    assert result.exit_code == 2
    assert message in result.stderr


def test_run_against_an_address_nobody_answers_at_says_so(tmp_path):
    with refusing_port() as port:
        result = invoke("run", "-m", f"127.0.0.1:{port}", job_file(tmp_path, TINY))
    assert result.exit_code == 1
    assert f"no session cluster answers at http://127.0.0.1:{port}" in result.stderr
    assert "fluvial cluster start" in result.stderr


def test_cluster_start_refuses_while_the_recorded_cluster_runs():
    recorded(ProcessRecord.of(os.getpid()))  # this process stands in for a live JobManager
    result = invoke("cluster", "start", "--port", "0")
    assert result.exit_code == 1
    assert "a session cluster is already running (JobManager pid" in result.stderr
    assert "fluvial cluster stop" in result.stderr


def test_cluster_stop_cleans_a_stale_file_and_what_it_left_running():
    leftover = sleeper(CLUSTER_ID)
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        recorded(ProcessRecord(dead.pid, 1), (ProcessRecord.of(leftover.pid),))
        result = invoke("cluster", "stop")
        assert result.exit_code == 0
        assert f"the cluster it recorded (JobManager pid {dead.pid}) is no longer running" in result.stdout
        assert leftover.wait(timeout=10) == -signal.SIGKILL  # a TaskManager it recorded, still there: killed
        assert read_cluster_file() is None
    finally:
        leftover.kill()
        leftover.wait()


def test_cluster_stop_never_signals_a_process_it_cannot_prove_is_the_clusters():
    stranger, impostor = sleeper(), sleeper("another cluster's id")
    try:
        recorded(ProcessRecord.of(stranger.pid), (ProcessRecord.of(impostor.pid),))  # forged: live PIDs, right times
        result = invoke("cluster", "stop")
        assert f"process {stranger.pid} is not provably the cluster's JobManager: not signalled" in result.stderr
        assert f"process {impostor.pid}, named by" in result.stderr
        assert stranger.poll() is None and impostor.poll() is None
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        recorded(ProcessRecord(dead.pid, 1), (ProcessRecord.of(stranger.pid),))  # stale, naming a stranger
        assert invoke("cluster", "stop").exit_code == 0
        assert stranger.poll() is None
    finally:
        for process in (stranger, impostor):
            process.kill()
            process.wait()


def test_cluster_stop_without_a_cluster_says_there_is_none():
    result = invoke("cluster", "stop")
    assert result.exit_code == 0
    assert f"No session cluster to stop: {cluster_file_path()} does not exist." in result.stdout


def test_cluster_start_takes_only_the_keys_a_cluster_uses():
    result = invoke("cluster", "start", "-D", "parallelism.default=4")
    assert result.exit_code == 2
    assert "-D parallelism.default: a session cluster takes slot.request.timeout" in result.stderr


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["list"], "no session cluster is recorded"),
        (["cancel", "not-a-job"], "'not-a-job' is not a job id: a JobID is 32 hex digits"),
        (["savepoint", "0" * 31], "is not a job id"),
    ],
)
def test_job_commands_without_a_cluster_or_with_a_bad_id_are_usage_errors(command, message):
    result = invoke(*command)
    assert result.exit_code == 2
    assert message in result.stderr


def progress(state: str, out: int) -> JobProgress:
    return JobProgress(
        "ab" * 16,
        "counting",
        state,
        1500,
        (VertexProgress("Source: numbers", 2, state, 0, out), VertexProgress("sum", 2, state, out, 0)),
        3,
        1,
        0,
    )


def test_without_a_terminal_progress_is_a_line_per_state_change_and_a_summary():
    stream = io.StringIO()
    display = ConsoleProgress(stream, terminal=False)
    display.progress(progress("RUNNING", 10))
    display.progress(progress("RUNNING", 20))  # no change of state: no line
    display.finished(progress("FINISHED", 30))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(f"Job counting ({'ab' * 16}) is RUNNING")
    assert lines[1].endswith(
        "ended FINISHED after 1.5 s: Source: numbers: 0 in, 30 out; sum: 30 in, 0 out; "
        "checkpoints 3 completed, 1 failed"
    )


def test_on_a_terminal_progress_is_a_live_table_left_on_screen():
    stream = io.StringIO()
    display = ConsoleProgress(stream, terminal=True)
    display.progress(progress("RUNNING", 1234))
    display.finished(progress("FINISHED", 5678))
    text = stream.getvalue()
    for shown in ("counting", "FINISHED", "checkpoints: 3 completed, 1 failed", "Source: numbers", "5,678"):
        assert shown in text
