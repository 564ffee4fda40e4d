"""The dashboard in a real browser: headless Chromium renders the page of a running job, and its DOM shows the
job's name, its vertices (as boxes of the job graph) and its checkpoints."""

from __future__ import annotations

import re
import subprocess

import pytest

from fluvial.testing import execution_modes, wait_until
from tests.integration.browser import CHROMIUM, chromium_command
from tests.integration.rest_client import serve_job

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)"
)


def render(url: str, profile: str) -> str:
    """The DOM of `url` once its scripts have fetched and drawn (Chromium's virtual time waits for them)."""
    command = chromium_command(profile, "--virtual-time-budget=8000", "--dump-dom", url)
    result = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", execution_modes(), ids=lambda mode: mode.value)
def test_the_job_page_shows_name_vertices_and_checkpoints(mode, tmp_path):
    served = serve_job(mode, str(tmp_path), "browser job", checkpoint_interval="100 ms")
    try:
        path = f"jobs/{served.job_id}/checkpoints"
        wait_until(lambda: served.get(path).body["counts"]["completed"] >= 2, timeout=30, what="two checkpoints")
        dom = render(served.url(f"#/job/{served.job_id}"), str(tmp_path / "profile"))
        assert re.search(r'<h1 id="job-name">browser job</h1>', dom), dom[:3000]
        vertices = re.findall(r'<g class="vertex [A-Za-z -]+" data-name="([^"]+)"', dom)
        assert vertices == ["Source: numbers", "double", "sum -&gt; discard"]
        assert 'data-ship-strategy="REBALANCE"' in dom and 'data-ship-strategy="HASH"' in dom
        rows = re.findall(r'<tr class="checkpoint-row" data-checkpoint-id="(\d+)">', dom)
        assert len(rows) >= 2 and "COMPLETED" in dom
        assert re.search(r'id="checkpoints-completed">(\d+)<', dom)
        assert 'class="panel subtasks"' in dom and "No exceptions." in dom

        overview = render(served.url(""), str(tmp_path / "profile"))
        assert 'class="job-link">browser job</a>' in overview and 'id="overview"' in overview
    finally:
        served.stop()


@pytest.mark.timeout(120)
def test_the_dashboards_actions_and_pages_clicked_in_a_browser(tmp_path):
    """Cancel, savepoint and stop behind the token; the subtasks of every vertex; the job's configuration; the
    TaskManagers page with a process's metrics and log; a stopped job FINISHED, a cancelled one CANCELED."""
    from fluvial.testing import ExecutionMode
    from tests.integration.browser import Browser

    kept = {"local.rest.keep-serving": "true"}  # the dashboards serve on after the jobs end, as with --web
    stopped = serve_job(ExecutionMode.THREADS, str(tmp_path), "to stop", **kept)
    cancelled = serve_job(ExecutionMode.THREADS, str(tmp_path), "to cancel", **kept)
    (tmp_path / "profile").mkdir()
    browser = Browser(tmp_path / "profile")
    try:
        # without the token, the cancel is refused and the job runs on
        browser.goto(cancelled.url(f"#/job/{cancelled.job_id}"))
        browser.click("#cancel-job")
        browser.wait_for("(document.getElementById('action-result') || {}).textContent", what="the cancel's answer")
        assert "refused the access token" in browser.text("#action-result")
        assert cancelled.get(f"jobs/{cancelled.job_id}").body["state"] == "RUNNING"
        # with it (from the address `fluvial run --web` prints), the cancel goes through
        browser.goto(cancelled.url(f"#/job/{cancelled.job_id}?token={cancelled.token}"))
        browser.wait_for("!location.hash.includes('token=')", what="the token taken out of the address")
        browser.click("#cancel-job")
        browser.wait_for(
            "document.querySelector('.job-header .badge').textContent === 'CANCELED'",
            timeout=30,
            what="the cancelled job CANCELED",
        )

        browser.goto(stopped.url(f"#/job/{stopped.job_id}?token={stopped.token}"))
        names = browser.wait_for(
            "document.querySelectorAll('section.subtasks').length === 3 && "
            "[...document.querySelectorAll('section.subtasks')].map(s => s.dataset.vertexName)",
            what="a subtasks panel per vertex",
        )
        assert sorted(names) == ["Source: numbers", "double", "sum -> discard"]
        assert browser.evaluate("document.querySelectorAll('g.vertex.state-RUNNING').length") == 3
        assert "Execution mode" in browser.text("#job-config") and "state.savepoints.dir" in browser.text("#job-config")
        browser.click("#trigger-savepoint")
        browser.wait_for(
            "((document.getElementById('action-result') || {}).textContent || '').includes('Savepoint completed')",
            timeout=30,
            what="the savepoint's location",
        )
        assert (tmp_path / "savepoints").exists()

        browser.goto(stopped.url("#/taskmanagers"))
        browser.click(".taskmanager-link")
        browser.wait_for("(document.getElementById('taskmanager-metrics') || {}).textContent", what="the metrics")
        assert "Memory (RSS)" in browser.text("#taskmanager-metrics") and "Threads" in browser.text(
            "#taskmanager-metrics"
        )
        browser.click("#tab-log")
        browser.wait_for(
            "((document.getElementById('taskmanager-log') || {}).textContent || '').includes('to stop')",
            what="the job's log records",
        )

        browser.goto(stopped.url(f"#/job/{stopped.job_id}"))
        browser.click("#stop-job")
        browser.wait_for(
            "document.querySelector('.job-header .badge').textContent === 'FINISHED'",
            timeout=30,
            what="the stopped job FINISHED",
        )
        browser.wait_for(
            "((document.getElementById('action-result') || {}).textContent || '')"
            ".includes('Stop with a savepoint completed')",
            what="the stop's savepoint location",
        )
        assert (
            browser.evaluate("getComputedStyle(document.querySelector('g.vertex rect.busy-fill')).fill")
            == "rgb(59, 111, 216)"
        )  # busy is blue, never the orange of back pressure or the red of failure
    finally:
        browser.close()
        stopped.stop()
        cancelled.stop()
