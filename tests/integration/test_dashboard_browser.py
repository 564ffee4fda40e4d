"""The dashboard in a real browser: headless Chromium renders the page of a running job, and its DOM shows the
job's name, its vertices (as boxes of the job graph) and its checkpoints."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from fluvial.testing import execution_modes, wait_until
from tests.integration.rest_client import serve_job

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)")


def render(url: str, profile: str) -> str:
    """The DOM of `url` once its scripts have fetched and drawn (Chromium's virtual time waits for them)."""
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
               f"--user-data-dir={profile}", "--virtual-time-budget=8000", "--dump-dom", url]
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
        vertices = re.findall(r'<g class="vertex [a-z ]+" data-name="([^"]+)"', dom)
        assert vertices == ["Source: numbers", "double", "sum -&gt; discard"]
        assert 'data-ship-strategy="REBALANCE"' in dom and 'data-ship-strategy="HASH"' in dom
        rows = re.findall(r'<tr class="checkpoint-row" data-checkpoint-id="(\d+)">', dom)
        assert len(rows) >= 2 and "COMPLETED" in dom
        assert re.search(r'id="checkpoints-completed">(\d+)<', dom)
        assert 'id="subtasks"' in dom and "No exceptions." in dom

        overview = render(served.url(""), str(tmp_path / "profile"))
        assert 'class="job-link">browser job</a>' in overview and 'id="overview"' in overview
    finally:
        served.stop()
