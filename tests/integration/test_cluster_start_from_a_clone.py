"""`fluvial cluster start` run from the folder that holds a clone of fluvial: the processes it starts must import
the installed fluvial, not the folder's `fluvial/` (a namespace package there), which `python -m` would put first
on sys.path; and a JobManager whose REST API fails says why within seconds instead of hanging for a minute."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fluvial.cli import cluster as cluster_command
from fluvial.cluster.session.cluster_file import ClusterRecord, ProcessRecord


def fluvial(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -P -m fluvial ARGS...` as an installed fluvial runs (no PYTHONPATH), in `cwd`, with HOME=`home`."""
    environment = {key: value for key, value in os.environ.items() if key not in ("FLUVIAL_TOKEN", "PYTHONPATH")}
    environment["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-P", "-m", "fluvial", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.timeout(60)
def test_cluster_start_from_a_folder_holding_a_fluvial_directory(tmp_path):
    (tmp_path / "fluvial").mkdir()
    (tmp_path / "fluvial" / "notes.py").write_text("")  # what a clone's folder looks like from outside
    home = tmp_path / "home"
    home.mkdir()
    started = fluvial(home, tmp_path, "cluster", "start", "--port", "0", "--taskmanagers", "1", "--slots", "1")
    try:
        assert started.returncode == 0, started.stderr + started.stdout
        assert "Dashboard and REST API: http://127.0.0.1:" in started.stdout
        out = (home / ".fluvial" / "log" / "jobmanager.out").read_text()
        assert "Traceback" not in out
    finally:
        stopped = fluvial(home, tmp_path, "cluster", "stop")
    assert stopped.returncode == 0, stopped.stderr


@pytest.mark.timeout(30)
def test_a_jobmanager_whose_rest_api_fails_is_stopped_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    log = tmp_path / ".fluvial" / "log"
    log.mkdir(parents=True)
    (log / "jobmanager.out").write_text(
        'Session cluster running\nTraceback (most recent call last):\n  File "rest.py", line 9, in overview\n'
        "    fluvial.__version__\nAttributeError: module 'fluvial' has no attribute '__version__'\n"
    )
    jobmanager = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record = ClusterRecord("127.0.0.1:9", "http://127.0.0.1:9", "token", ProcessRecord.of(jobmanager.pid))
    monkeypatch.setattr(cluster_command, "ANSWER_TIMEOUT_SECONDS", 0.5)
    monkeypatch.setattr(cluster_command, "_read_record", lambda: record)
    monkeypatch.setattr(cluster_command, "_answer_problem", lambda _: "HTTP 500 from GET /overview")
    monkeypatch.setattr(cluster_command.subprocess, "Popen", lambda *_, **__: jobmanager)
    began = time.monotonic()
    with pytest.raises(Exception) as ended:
        cluster_command._start_in_background(cluster_command.SessionClusterSpec(1, 1, 0, "127.0.0.1"), [])
    assert getattr(ended.value, "exit_code", None) == 1
    assert time.monotonic() - began < 10
    assert jobmanager.poll() is not None  # stopped
    err = capsys.readouterr().err
    assert "fails (HTTP 500 from GET /overview)" in err
    assert "AttributeError: module 'fluvial' has no attribute '__version__'" in err
