"""Which of the job's modules travel to Ray workers as py_modules: those the job file imported from its own
directory — single-file modules and packages — never the job file itself, fluvial, installed packages, or
anything when __main__ is no job file."""

from __future__ import annotations

import sys
import types

import pytest

from fluvial.cluster.ray.code_shipping import job_directory_modules


def module(name: str, path: str) -> types.ModuleType:
    made = types.ModuleType(name)
    made.__file__ = path
    return made


@pytest.fixture
def job_dir(tmp_path, monkeypatch):
    """A job file `job.py` running as __main__ in tmp_path, with a helper module and a helper package beside it,
    both imported; and modules from elsewhere."""
    (tmp_path / "helpers.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "inner.py").write_text("")
    (tmp_path / "job.py").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "other.py").write_text("")
    for name, path in [("__main__", tmp_path / "job.py"), ("helpers", tmp_path / "helpers.py"),
                       ("pkg", tmp_path / "pkg" / "__init__.py"), ("pkg.inner", tmp_path / "pkg" / "inner.py"),
                       ("other", elsewhere / "other.py"), ("job", tmp_path / "job.py")]:
        monkeypatch.setitem(sys.modules, name, module(name, str(path)))
    return tmp_path


def test_modules_and_packages_imported_from_the_job_files_directory_are_shipped(job_dir):
    assert job_directory_modules() == [str(job_dir / "helpers.py"), str(job_dir / "pkg")]


def test_nothing_is_shipped_when_main_is_no_job_file(job_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # an interactive session
    assert job_directory_modules() == []
    monkeypatch.setitem(sys.modules, "__main__", module("__main__", "/venv/lib/python3.11/site-packages/tool.py"))
    assert job_directory_modules() == []
