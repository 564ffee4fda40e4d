"""`fluvial run --web` in a terminal: once the job has ended, its dashboard still answers — the demo's can be read
after it ends — until the user presses Ctrl-C; then the run ends with the job's exit code."""

from __future__ import annotations

import os
import pty
import queue
import re
import signal
import subprocess
import threading
import time

import pytest

from tests.integration.rest_client import http
from tests.unit.cli.helpers import fluvial_process, job_file


def read_until(stream, pattern: str, timeout: float = 30) -> str:
    """What `stream` says until a line matches `pattern` (the match's text); a thread reads, so no wait blocks."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    deadline, seen = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        seen += line
        found = re.search(pattern, line)
        if found:
            return found.group(0)
    raise AssertionError(f"no line matching {pattern!r} within {timeout} s; seen:\n{seen}")


@pytest.mark.timeout(60)
def test_run_web_keeps_the_dashboard_of_an_ended_job_until_ctrl_c(tmp_path):
    job = job_file(tmp_path, "env.from_collection([1, 2]).print()\nenv.execute('short')\n")
    controller, terminal = pty.openpty()
    process = fluvial_process(
        "run",
        "--web",
        "-D",
        "rest.port=0",
        job,
        stdin=terminal,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(terminal)
    try:
        address = read_until(process.stderr, r"the dashboard stays at (http://127\.0\.0\.1:\d+)")
        url = address.rsplit(" ", 1)[1]
        jobs = http("GET", f"{url}/jobs/overview").body["jobs"]
        assert [(job["name"], job["state"]) for job in jobs] == [("short", "FINISHED")]
        assert http("GET", f"{url}/").status == 200  # the dashboard itself
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
