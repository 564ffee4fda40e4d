"""Job files and ways to run the `fluvial` command on them, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from fluvial.cli import app

runner = CliRunner()

HEADER = """\
import sys
from fluvial.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
"""


def job_file(tmp_path: Path, body: str, name: str = "job.py") -> Path:
    """A job file: the header (imports and `env`), then `body`."""
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def invoke(*args: object):
    """`fluvial ARGS...` in this process (stdout and stderr captured apart)."""
    return runner.invoke(app, [str(arg) for arg in args])


def fluvial_process(*args: object, **popen: object) -> subprocess.Popen:
    """`python -m fluvial ARGS...` as a process of its own, with this checkout first on its path."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "fluvial", *(str(arg) for arg in args)],
        env=env,
        text=True,
        **popen,  # type: ignore[arg-type]
    )
