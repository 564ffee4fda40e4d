"""A job's Python dependencies (PyFlink's `add_python_file`, `set_python_requirements`, `add_python_archive`,
`set_python_executable`), recorded in the job's configuration under PyFlink's keys and applied at submission.

- `python.files` (comma-separated): each file's directory, each directory, each .zip/.whl/.egg archive goes on
  `sys.path` while the job runs (TaskManagers as threads share this interpreter; TaskManager processes of this
  machine start with the client's sys.path, so they have them too), and comes off when it ends; modules the
  job imported stay in `sys.modules`.
- `python.requirements` (a requirements file, PyFlink's `file#cache_dir`) and `python.archives` (comma-separated
  `archive#target`) make the job's own Python environment, which the cluster that runs the job builds before
  its code is loaded (`fluvial.cluster.python_environment`): requirements installed once per file content and
  put on the job's `sys.path`, archives extracted into the job's working directory. Archives need TaskManager
  processes (their working directory is where archives are found), so `local.taskmanager.mode: auto` takes
  processes for such a job, and `thread` is refused.
- A `python.executable` other than this interpreter is refused: the TaskManagers run in this interpreter. So
  are `python.files`, `python.requirements` and `python.archives` when the TaskManagers run on other machines
  (Ray).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError, InvalidJobError, NotYetSupportedError

logger = logging.getLogger(__name__)

FILES, REQUIREMENTS, ARCHIVES, EXECUTABLE = (
    "python.files",
    "python.requirements",
    "python.archives",
    "python.executable",
)
FILE_DELIMITER, PARAM_DELIMITER = ",", "#"
_ARCHIVE_SUFFIXES = (".zip", ".whl", ".egg")
_LOCK = threading.Lock()
_ON_PATH: dict[str, int] = {}  # entries this module put on sys.path, with the number of jobs using each


def _existing(path: str, what: str) -> str:
    if not isinstance(path, str) or not path:
        raise InvalidJobError(f"{what} needs a path, got {path!r}")
    absolute = os.path.abspath(path)
    if not os.path.exists(absolute):
        raise InvalidJobError(f"{what}: {path!r} does not exist; give an existing file or directory")
    return absolute


def _append(config: Configuration, key: str, item: str) -> None:
    current = config.get_string(key)
    config.set_string(key, item if not current else FILE_DELIMITER.join([current, item]))


def add_file(config: Configuration, file_path: str) -> None:
    _append(config, FILES, _existing(file_path, "add_python_file"))


def set_requirements(config: Configuration, requirements_file_path: str, cache_dir: str | None) -> None:
    value = _existing(requirements_file_path, "set_python_requirements")
    if cache_dir is not None:
        value = PARAM_DELIMITER.join([value, _existing(cache_dir, "set_python_requirements cache dir")])
    config.set_string(REQUIREMENTS, value)


def add_archive(config: Configuration, archive_path: str, target_dir: str | None) -> None:
    value = _existing(archive_path, "add_python_archive")
    _append(config, ARCHIVES, value if target_dir is None else PARAM_DELIMITER.join([value, target_dir]))


def set_executable(config: Configuration, python_exec: str) -> None:
    if not isinstance(python_exec, str) or not python_exec:
        raise InvalidJobError(f"set_python_executable needs the path of a Python interpreter, got {python_exec!r}")
    config.set_string(EXECUTABLE, python_exec)


def sys_path_entry(path: str) -> str:
    """What goes on sys.path for a `python.files` entry: a directory or archive itself, a file's directory."""
    if os.path.isdir(path) or path.endswith(_ARCHIVE_SUFFIXES):
        return path
    return os.path.dirname(path)


def _same_interpreter(python_exec: str) -> bool:
    import shutil

    found = shutil.which(python_exec) or python_exec
    return os.path.realpath(found) == os.path.realpath(sys.executable)


def check_supported(config: Configuration, this_machine: bool) -> None:
    """Refuse what the job asked for but cannot have, naming the key and the way out. `this_machine`: the
    TaskManagers run here (threads, or processes of this machine), so the paths the keys name reach them."""
    executable = config.get_string(EXECUTABLE)
    if executable and not _same_interpreter(executable):
        raise NotYetSupportedError(
            f"'{EXECUTABLE}' = {executable!r} is not supported yet: the job's TaskManagers run in {sys.executable}; "
            "remove set_python_executable or run the program with that interpreter"
        )
    if config.get_string(FILES) and not this_machine:
        raise NotYetSupportedError(
            f"'{FILES}' is not supported yet when TaskManagers run on other machines (Ray): modules the job file "
            "imports from its own directory are shipped to Ray workers by themselves; set ray.working-dir to ship "
            "a directory, or install the files as a package"
        )
    for key in (REQUIREMENTS, ARCHIVES):
        if config.get_string(key) and not this_machine:
            raise NotYetSupportedError(
                f"'{key}' is not supported yet when TaskManagers run on other machines (Ray): install the requirements "
                "on the Ray workers' interpreter, and ship files with ray.working-dir"
            )
    embedded = config.get("execution.target") in ("local", "embedded")
    if config.get_string(ARCHIVES) and embedded and config.get("local.taskmanager.mode") == "thread":
        raise ConfigurationError(
            f"'{ARCHIVES}' needs TaskManager processes (an archive is found in their working directory), and "
            "local.taskmanager.mode is thread: set it to process or auto, or remove the archives"
        )


def apply(config: Configuration) -> Callable[[], None]:
    """Put `python.files` on sys.path; returns the function that takes them off when the job ends."""
    raw = config.get_string(FILES)
    if not raw:
        return _nothing
    entries = list(dict.fromkeys(sys_path_entry(p) for p in raw.split(FILE_DELIMITER) if p))
    logger.info("python.files on sys.path for the job: %s", entries)
    return put_on_path(entries)


def put_on_path(entries: list[str]) -> Callable[[], None]:
    """Put `entries` first on sys.path, counted per user (an entry two jobs need stays until both ended);
    returns the function that takes this user's entries off again (entries already there are left alone)."""
    if not entries:
        return _nothing
    with _LOCK:
        for entry in entries:
            if _ON_PATH.get(entry):
                _ON_PATH[entry] += 1
            elif entry not in sys.path:
                sys.path.insert(0, entry)
                _ON_PATH[entry] = 1

    def remove(*_: Any) -> None:
        with _LOCK:
            for entry in entries:
                count = _ON_PATH.get(entry, 0)
                if count > 1:
                    _ON_PATH[entry] = count - 1
                elif count == 1:
                    del _ON_PATH[entry]
                    if entry in sys.path:
                        sys.path.remove(entry)

    return remove


def _nothing(*_: Any) -> None:
    pass
