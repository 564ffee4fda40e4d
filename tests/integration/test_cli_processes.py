"""The `fluvial` command as a user meets it, in processes of its own: `python -m fluvial`, the console script,
`fluvial run job.py | head` (quiet, exit 141, the job cancelled), and Ctrl-C."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.cli.helpers import fluvial_process, job_file

ENDLESS = """\
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
env.set_parallelism(1)
{setup}
env.from_source(NumberSequenceSource(0, 10**12)){pipeline}.print()
env.execute("endless")
"""


def run_like_head(job: Path, lines: int) -> tuple[list[str], int, str]:
    """`fluvial run JOB | head -LINES`: read that many lines, close the pipe; the lines, exit code and stderr."""
    process = fluvial_process("run", job, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    read = [process.stdout.readline() for _ in range(lines)]
    process.stdout.close()
    _, err = finish(process)
    return read, process.returncode, err


FLINK_LINES = ("Job has been submitted with JobID ", "Program execution finished", "Job with JobID ", "Job Runtime: ")


def without_submission_lines(err: str) -> str:
    """stderr without the lines Flink's `run` prints about each job: `Job has been submitted with JobID ...`, and
    once its `execute()` returned, `Program execution finished` with the JobID and runtime. A job that ends
    before the reader of stdout goes away gets the second kind too, one that ends after does not: a race the
    tests of a closed pipe do not judge (what they judge is that nothing else reaches stderr)."""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith(FLINK_LINES))


def finish(process: subprocess.Popen, timeout: float = 30) -> tuple[str, str]:
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"fluvial did not end within {timeout} s") from None


@pytest.mark.timeout(60)
def test_python_dash_m_fluvial_runs_a_job_and_reports_a_file_without_one(tmp_path):
    ok = job_file(tmp_path, "env.set_parallelism(1)\nenv.from_collection(['only']).print()\nenv.execute()\n", "ok.py")
    out, err = finish(process := fluvial_process("run", ok, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    assert process.returncode == 0, err
    assert out == "only\n"

    empty = job_file(tmp_path, "pass\n", name="empty.py")
    out, err = finish(process := fluvial_process("run", empty, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    assert process.returncode == 2
    assert "empty.py defined no job" in err


@pytest.mark.timeout(60)
def test_the_console_script_is_installed_and_answers():
    script = shutil.which("fluvial", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("no `fluvial` console script next to this Python: install the package (make test does)")
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    assert done.stdout.startswith("fluvial ")


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("case", "setup", "pipeline"),
    [
        ("printing without end", "", ""),
        # a failure would restart this job forever; cancelled, it ends
        ("with checkpoints and restarts", "env.enable_checkpointing(50)", ""),
        # prints three lines, then nothing: the closed pipe is noticed without a write
        ("silent after the first lines", "", ".filter(lambda x: x < 3)"),
    ],
)
def test_a_closed_pipe_ends_the_run_quietly_with_141_and_cancels_the_job(tmp_path, case, setup, pipeline):
    lines, code, err = run_like_head(job_file(tmp_path, ENDLESS.format(setup=setup, pipeline=pipeline)), 3)
    assert lines == ["0\n", "1\n", "2\n"]
    assert without_submission_lines(err) == ""
    assert code == 141  # 128 + SIGPIPE, as a shell reports a tool that SIGPIPE ended


@pytest.mark.timeout(60)
def test_a_job_file_printing_after_the_pipe_closed_ends_quietly(tmp_path):
    body = """\
env.from_collection([1]).print()
env.execute()
try:
    n = 0
    while True:
        print(n)
        n += 1
except Exception:  # a job file's catch-all does not keep it writing into nothing
    pass
"""
    _, code, err = run_like_head(job_file(tmp_path, body), 1)
    assert (code, without_submission_lines(err)) == (141, "")


@pytest.mark.timeout(60)
def test_ctrl_c_cancels_the_running_job_and_exits_130(tmp_path):
    job = job_file(tmp_path, ENDLESS.format(setup="", pipeline=""))
    process = fluvial_process(
        "run",
        job,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background child may inherit SIG_IGN
    )
    assert process.stdout is not None
    process.stdout.readline()  # the job is running
    process.send_signal(signal.SIGINT)
    _, err = finish(process)
    assert process.returncode == 130
    assert without_submission_lines(err) == "error: interrupted\n"


@pytest.mark.timeout(60)
def test_a_closed_pipe_met_outside_sys_stdout_still_ends_quietly(tmp_path):
    """A write to sys.stdout.buffer bypasses the guard: its BrokenPipeError fails the file, and fluvial, seeing
    that the reader is gone, ends as quietly as for any other write."""
    body = """\
env.from_collection([1]).print()
env.execute()
sys.stdout.flush()
while True:
    sys.stdout.buffer.write(b"raw bytes\\n" * 1000)
"""
    _, code, err = run_like_head(job_file(tmp_path, body), 1)
    assert (code, without_submission_lines(err)) == (141, "")
