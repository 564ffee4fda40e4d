"""What a user's terminal shows of fluvial: its own log records go to log files (one per embedded job), reach
the program's logging only from WARNING on (or when asked, $FLUVIAL_LOG_LEVEL), and an error is said once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.programs import user_environment

ROOT = Path(__file__).resolve().parents[2]

FAILING = """\
from fluvial.datastream import StreamExecutionEnvironment

def parse(value):
    if value == 3:
        raise ValueError("bad record 3")
    return value

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1, 2, 3]).map(parse).print()
env.execute("failing")
"""

LOGGING_PROGRAM = """\
import logging, sys
from fluvial.datastream import StreamExecutionEnvironment

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
logging.getLogger("mine").info("the program's own line")
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1]).print()
env.execute("quiet")
"""


def run(tmp_path: Path, body: str, *command: str, **env: str) -> subprocess.CompletedProcess:
    """`python [-m fluvial run] job.py` with the log directory in tmp_path, as a user runs it."""
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(body))
    environment = user_environment(FLUVIAL_LOG_DIR=str(tmp_path / "log"), PYTHONPATH=str(ROOT), **env)
    return subprocess.run(
        [sys.executable, *command, str(job)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
        cwd=tmp_path,
    )


def job_logs(tmp_path: Path) -> str:
    return "".join(path.read_text() for path in sorted((tmp_path / "log").glob("job-*.log")))


@pytest.mark.timeout(60)
def test_a_failed_jobs_error_is_said_once_and_the_log_file_has_the_details(tmp_path):
    done = run(tmp_path, FAILING, "-m", "fluvial", "run")
    assert done.returncode == 1
    assert done.stderr.count("error: Job 'failing'") == 1
    assert "allows no restart" not in done.stderr  # the JobManager's record of it: in the job's log file only
    assert done.stderr.count('raise ValueError("bad record 3")') == 1
    assert "allows no restart" in job_logs(tmp_path)


@pytest.mark.timeout(60)
def test_fluvials_info_records_stay_out_of_a_program_that_logs_info_to_stdout(tmp_path):
    done = run(tmp_path, LOGGING_PROGRAM)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["the program's own line", "1"]
    assert done.stderr == ""
    assert "switched from CREATED to RUNNING" in job_logs(tmp_path)


@pytest.mark.timeout(60)
def test_fluvials_info_records_reach_the_program_when_asked(tmp_path):
    done = run(tmp_path, LOGGING_PROGRAM, FLUVIAL_LOG_LEVEL="INFO")
    assert done.returncode == 0, done.stderr
    assert any("switched from CREATED to RUNNING" in line for line in done.stdout.splitlines())


@pytest.mark.timeout(60)
def test_an_unpicklable_closure_is_reported_once_without_pickling_frames(tmp_path):
    body = """\
    import threading
    from fluvial.datastream import StreamExecutionEnvironment

    lock = threading.Lock()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(lambda value: (lock, value)[1]).print()
    env.execute("unpicklable")
    """
    done = run(tmp_path, body, "-m", "fluvial", "run", "-D", "local.taskmanager.mode=process")
    assert done.returncode == 1
    assert "the variable 'lock' (_thread.lock), which the function <lambda>" in done.stderr
    assert "cloudpickle" not in done.stderr and "direct cause" not in done.stderr
    assert done.stderr.count("cannot be pickled") == 1
