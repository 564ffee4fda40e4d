"""The Python environments of the jobs a TaskManager process runs (`JobPythonEnvironment`, built by the cluster
in `cluster/python_environment.py`): entered when the job's first deployment arrives, before its functions are
unpickled (they may import its requirements), left when the job is released.

- `path` entries go on this process's `sys.path`, counted per job, and come off when the last job using them
  leaves.
- Archives: the first job with archives moves this process into a working directory of its own (a temporary
  directory, removed when the process ends); each archive target is a link there to the job's extracted copy, so
  `open("target/...")` in a user function finds it, as in PyFlink's Python workers. Two jobs running at once that
  name the same target with different contents cannot both have it: the second one's deployment fails, naming
  the target and the other job.
Called from the thread that reads the control connection only (one at a time).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable

from fluvial.common.errors import FluvialError
from fluvial.datastream.python_dependencies import put_on_path
from fluvial.runtime.deployment import JobPythonEnvironment

logger = logging.getLogger(__name__)


class ArchiveConflictError(FluvialError):
    """Two jobs on one TaskManager process name the same archive target."""


class JobEnvironments:
    def __init__(self, index: int) -> None:
        self._index = index
        self._jobs: dict[str, tuple[JobPythonEnvironment, Callable[[], None]]] = {}
        self._links: dict[str, str] = {}  # archive target in the working directory -> the job that owns it
        self._working_directory: str | None = None

    def enter(self, job_id: str, environment: JobPythonEnvironment | None) -> None:
        """Make the job's environment this process's (once per job; later deployments find it entered)."""
        if environment is None or job_id in self._jobs:
            return
        if environment.working_directory is not None:
            self._link_archives(job_id, environment)
        self._jobs[job_id] = (environment, put_on_path(list(environment.path)))
        logger.info("job %s: its Python environment is entered (%s)", job_id, environment)

    def leave(self, job_id: str) -> None:
        entered = self._jobs.pop(job_id, None)
        if entered is None:
            return
        environment, release = entered
        release()
        for target in environment.archives:
            if self._links.get(target) == job_id and self._working_directory is not None:
                del self._links[target]
                os.unlink(os.path.join(self._working_directory, target))

    def close(self) -> None:
        for job_id in list(self._jobs):
            self.leave(job_id)
        if self._working_directory is not None:
            shutil.rmtree(self._working_directory, ignore_errors=True)

    def _link_archives(self, job_id: str, environment: JobPythonEnvironment) -> None:
        for target in environment.archives:
            owner = self._links.get(target)
            if owner is not None and owner != job_id:
                raise ArchiveConflictError(
                    f"TaskManager {self._index} runs job {owner}, whose python.archives target {target!r} is in its "
                    f"working directory; job {job_id} names the same target: give one of them another name after "
                    "'#' (add_python_archive(path, target_dir))"
                )
        if self._working_directory is None:
            self._working_directory = tempfile.mkdtemp(prefix=f"fluvial-taskmanager-{self._index}-python-")
            os.chdir(self._working_directory)
        assert environment.working_directory is not None
        for target in environment.archives:
            os.symlink(
                os.path.join(environment.working_directory, target), os.path.join(self._working_directory, target)
            )
            self._links[target] = job_id
