"""`fluvial run` with `flink run`'s Python options (-py, -pym, -pyfs, -pyreq, -pyarch) and Flink's lines about
each job (its JobID, its runtime)."""

from __future__ import annotations

import re

import pytest

from tests.unit.cli.helpers import HEADER, invoke, job_file

PRINT_ARGV = """\
print("argv:", sys.argv[1:], "parallelism:", env.get_parallelism())
env.from_collection([1]).print()
env.execute()
"""


@pytest.mark.timeout(30)
def test_dash_py_names_the_job_file_and_what_follows_is_the_jobs(tmp_path):
    path = job_file(tmp_path, PRINT_ARGV)
    result = invoke("run", "-p", "2", "-py", path, "--input", "in.txt", "-p", "4")
    assert result.exit_code == 0, result.output
    assert "argv: ['--input', 'in.txt', '-p', '4'] parallelism: 2" in result.stdout


@pytest.mark.timeout(30)
def test_long_python_option_and_fluvial_options_after_it(tmp_path):
    path = job_file(tmp_path, PRINT_ARGV)
    result = invoke("run", "--python", path, "-p", "3", "x")
    assert result.exit_code == 0, result.output
    assert "argv: ['x'] parallelism: 3" in result.stdout


@pytest.mark.timeout(30)
def test_dash_pym_runs_a_module_found_on_dash_pyfs(tmp_path):
    package = tmp_path / "lib" / "jobs"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "count.py").write_text(
        HEADER + "print('module argv:', sys.argv[1:], __name__)\nenv.from_collection([7]).print()\nenv.execute()\n"
    )
    result = invoke("run", "-pyfs", tmp_path / "lib", "-pym", "jobs.count", "--flag", "v")
    assert result.exit_code == 0, result.output
    assert "module argv: ['--flag', 'v'] __main__" in result.stdout
    assert "7\n" in result.stdout


@pytest.mark.timeout(30)
def test_dash_pym_of_a_missing_module_is_a_usage_error(tmp_path):
    result = invoke("run", "-pym", "no_such_module_here")
    assert result.exit_code == 2
    assert "no module named 'no_such_module_here'" in result.stderr and "-pyfs" in result.stderr


@pytest.mark.timeout(30)
def test_dash_pyfs_puts_its_files_on_the_jobs_path(tmp_path):
    helpers = tmp_path / "shared"
    helpers.mkdir()
    (helpers / "shout_for_pyfs.py").write_text("def shout(s):\n    return s.upper()\n")
    body = """\
from shout_for_pyfs import shout
env.from_collection(["a"]).map(shout).print()
env.execute()
"""
    result = invoke("run", "-pyfs", helpers / "shout_for_pyfs.py", "-py", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "A\n" in result.stdout


def test_dash_pyfs_of_a_missing_path_is_a_usage_error(tmp_path):
    result = invoke("run", "-pyfs", tmp_path / "absent", "-py", job_file(tmp_path, PRINT_ARGV))
    assert result.exit_code == 2 and "-pyfs: " in result.stderr and "absent" in result.stderr


@pytest.mark.timeout(30)
def test_dash_pyreq_and_dash_pyarch_become_pyflinks_keys(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("")
    body = """\
print("keys:", env.get_configuration().get_string("python.requirements", None),
      env.get_configuration().get_string("python.archives", None))
"""
    result = invoke("run", "-pyreq", requirements, "-pyarch", "data.zip#data", "-py", job_file(tmp_path, body))
    assert f"keys: {requirements} data.zip#data" in result.stdout


def test_dash_py_and_dash_pym_together_are_a_usage_error(tmp_path):
    for args in (["-py", job_file(tmp_path, PRINT_ARGV), "-pym", "x"], ["-pym", "x", "-py", tmp_path / "job.py"]):
        result = invoke("run", *args)  # both are fluvial's options wherever they stand, as both are Flink's
        assert result.exit_code == 2 and "give one of them" in result.stderr


@pytest.mark.timeout(30)
def test_run_says_flinks_lines_about_each_job(tmp_path):
    result = invoke("run", "-py", job_file(tmp_path, PRINT_ARGV))
    assert result.exit_code == 0, result.output
    job_id = re.search(r"^Job has been submitted with JobID ([0-9a-f]{32})$", result.stderr, re.M).group(1)
    assert f"Program execution finished\nJob with JobID {job_id} has finished.\n" in result.stderr
    assert re.search(r"^Job Runtime: \d+ ms$", result.stderr, re.M)
    assert "Job has been submitted" not in result.stdout  # stdout carries the job's records alone
