"""Job history: an embedded job configured with jobmanager.archive.fs.dir is archived when it ends, and
`fluvial history-server` serves it — its pages in the same dashboard — after the program that ran it exited (a
session cluster's archive, served after the cluster stopped: test_session_cluster.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration.rest_client import http
from tests.integration.test_run_web_after_the_job import read_until

ROOT = Path(__file__).resolve().parents[2]

JOB = """\
from fluvial.common import Configuration
from fluvial.datastream import StreamExecutionEnvironment

configuration = Configuration()
configuration.set_string("jobmanager.archive.fs.dir", {archive!r})
env = StreamExecutionEnvironment.get_execution_environment(configuration)
env.from_collection([1, 2, 3]).map(lambda x: x * 2).name("double").print()
env.execute("archived job")
"""


@pytest.mark.timeout(90)
def test_the_history_server_serves_an_archived_job_after_its_program_exited(tmp_path):
    archive = tmp_path / "archive"
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(JOB.format(archive=str(archive))))
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    ran = subprocess.run([sys.executable, str(job)], capture_output=True, text=True, timeout=60, env=environment)
    assert ran.returncode == 0, ran.stderr
    (archived,) = [path.name for path in archive.iterdir()]

    server = subprocess.Popen(
        [sys.executable, "-m", "fluvial", "history-server", "--dir", str(archive), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    try:
        url = read_until(server.stdout, r"http://127\.0\.0\.1:\d+")
        jobs = http("GET", f"{url}/jobs/overview").body["jobs"]
        assert [(job["jid"], job["name"], job["state"]) for job in jobs] == [(archived, "archived job", "FINISHED")]
        details = http("GET", f"{url}/jobs/{archived}").body
        assert details["state"] == "FINISHED" and any("double" in v["name"] for v in details["vertices"])
        vertex = details["vertices"][0]["id"]
        assert http("GET", f"{url}/jobs/{archived}/vertices/{vertex}").status == 200
        assert http("GET", f"{url}/jobs/{archived}/config").body["name"] == "archived job"
        assert http("POST", f"{url}/jobs/{archived}/stop", body={}).status == 405  # history: nothing to act on
        assert http("GET", f"{url}/").status == 200  # the same dashboard, over the archived answers
        assert http("GET", f"{url}/config").body["features"]["web-history"] is True
    finally:
        server.terminate()
        server.wait(timeout=30)
        server.stdout.close()
        server.stderr.close()
