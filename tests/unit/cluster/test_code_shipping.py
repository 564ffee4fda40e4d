"""Which of the job's modules travel with it (`fluvial.cluster.code_shipping.job_modules`), the same for every
kind of cluster — by value to a session cluster, as Ray `py_modules` to actors: those the job file imported from
its own directory or from `python.files` — single-file modules and packages — never the job file itself,
fluvial, installed packages, or anything when __main__ is no job file and no python.files are named."""

from __future__ import annotations

import sys
import types

import pytest

from fluvial.cluster.code_shipping import job_modules, module_paths


def module(name: str, path: str) -> types.ModuleType:
    made = types.ModuleType(name)
    made.__file__ = path
    return made


@pytest.fixture
def job_dir(tmp_path, monkeypatch):
    """A job file `job.py` running as __main__ in tmp_path/job, with a helper module and a helper package beside
    it, both imported; the job file imported under its own name too; and a module from elsewhere."""
    job_dir = tmp_path / "job"
    (job_dir / "pkg").mkdir(parents=True)
    for name in ("helpers.py", "pkg/__init__.py", "pkg/inner.py", "job.py"):
        (job_dir / name).write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "other.py").write_text("")
    for name, path in [
        ("__main__", job_dir / "job.py"),
        ("helpers", job_dir / "helpers.py"),
        ("pkg", job_dir / "pkg" / "__init__.py"),
        ("pkg.inner", job_dir / "pkg" / "inner.py"),
        ("other", elsewhere / "other.py"),
        ("job", job_dir / "job.py"),
    ]:
        monkeypatch.setitem(sys.modules, name, module(name, str(path)))
    return job_dir


def test_modules_and_packages_imported_from_the_job_files_directory_are_shipped(job_dir):
    assert [m.__name__ for m in job_modules()] == ["helpers", "pkg"]
    assert module_paths(job_modules()) == [str(job_dir / "helpers.py"), str(job_dir / "pkg")]


def test_python_files_name_more_of_the_jobs_own_modules(job_dir):
    other = job_dir.parent / "elsewhere" / "other.py"
    assert [m.__name__ for m in job_modules([str(other)])] == ["helpers", "other", "pkg"]


def test_nothing_is_shipped_when_main_is_no_job_file(job_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # an interactive session
    assert job_modules() == []
    monkeypatch.setitem(sys.modules, "__main__", module("__main__", "/venv/lib/python3.11/site-packages/tool.py"))
    assert job_modules() == []
