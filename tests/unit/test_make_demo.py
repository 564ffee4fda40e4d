"""`make demo` installs fluvial alone — not the test extra (Ray, pyarrow), which only `make test` needs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(30)
@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make (Debian package make)")
def test_make_demo_installs_only_what_the_demo_needs(tmp_path):
    def plan(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", target, f"VENV={tmp_path / 'venv'}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    demo = plan("demo")
    assert " -e .\n" in demo and "[test]" not in demo
    assert "'.[test]'" in plan("test")
