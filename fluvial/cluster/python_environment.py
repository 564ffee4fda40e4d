"""A job's Python environment, built where its TaskManagers run before any of its code is loaded: PyFlink's
`python.requirements` (`set_python_requirements`, `-pyreq`) and `python.archives` (`add_python_archive`,
`-pyarch`).

Requirements, numbered:
1. The install directory is keyed by the requirements file's content and the interpreter (its cache tag and
   machine), under `python.requirements.install-dir` (default: the user's cache, `~/.cache/fluvial/
   python-requirements`). A directory that is there is complete: a second job with the same file reuses it
   and pip does not run.
2. Otherwise pip installs the file into a staging directory beside it (`pip install --target`), under a file
   lock so that two jobs (or two clusters) starting at once install once; with PyFlink's second argument, the
   requirements cache directory, pip installs from it alone (`--no-index --find-links DIR`). The staging
   directory is renamed into place only when pip succeeded.
3. A failing install is a PythonEnvironmentError naming the file, the requirement pip stopped at (when its
   last line names one) and pip's last line; nothing is left behind, so the next job tries again.
The install directory goes on the `sys.path` of the job's TaskManagers while the job runs there.

Archives: each `path[#target]` is extracted into a directory of the job's own (removed when the job ends)
under its target name — the archive's file name when none is given, as PyFlink does — and a TaskManager
process makes it reachable from its working directory under that name (`process/job_environment.py`), so
user functions open `target/...` as they do in PyFlink's Python workers. Zip (also .jar, .whl, .egg) and tar
(.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz) archives; tar members that would land outside the target are refused.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from typing import Any

from fluvial.common.errors import ConfigurationError, FluvialError
from fluvial.datastream.python_dependencies import ARCHIVES, FILE_DELIMITER, PARAM_DELIMITER, REQUIREMENTS
from fluvial.runtime.deployment import JobPythonEnvironment

logger = logging.getLogger(__name__)

INSTALL_DIR_KEY = "python.requirements.install-dir"
_ZIP_SUFFIXES = (".zip", ".jar", ".whl", ".egg")
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class PythonEnvironmentError(FluvialError):
    """A job's requirements could not be installed, or its archives not extracted: the job does not start."""


def default_install_dir() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "fluvial", "python-requirements")


def install_dir_of(*configurations: Any) -> str:
    """`python.requirements.install-dir` from the first configuration that sets it (the job's, then the
    cluster's), else the user's cache."""
    for configuration in configurations:
        value = configuration.get_string(INSTALL_DIR_KEY) if configuration is not None else None
        if value:
            return os.path.abspath(os.path.expanduser(str(value)))
    return default_install_dir()


def build(configuration: Any, job_id: str, install_dir: str) -> JobPythonEnvironment | None:
    """The environment the job's configuration asks for (None when it asks for none). Blocks while pip runs."""
    if configuration is None:
        return None
    requirements = configuration.get_string(REQUIREMENTS)
    archives = configuration.get_string(ARCHIVES)
    if not requirements and not archives:
        return None
    path: tuple[str, ...] = ()
    if requirements:
        requirements_file, _, find_links = requirements.partition(PARAM_DELIMITER)
        path = (install_requirements(requirements_file, find_links or None, install_dir),)
    if not archives:
        return JobPythonEnvironment(path)
    working_directory = tempfile.mkdtemp(prefix=f"fluvial-job-{job_id[:8]}-archives-")
    try:
        targets = extract_archives(archives, working_directory)
    except BaseException:
        shutil.rmtree(working_directory, ignore_errors=True)
        raise
    return JobPythonEnvironment(path, working_directory, targets)


def discard(environment: JobPythonEnvironment | None) -> None:
    """Remove what belongs to one job (its extracted archives); installed requirements stay cached."""
    if environment is not None and environment.working_directory is not None:
        shutil.rmtree(environment.working_directory, ignore_errors=True)


# -- requirements -----------------------------------------------------------------------------------------------


def requirements_key(content: bytes) -> str:
    """Step 1: what names an install directory — the file's content and the interpreter it is for."""
    interpreter = f"{sys.implementation.cache_tag}-{platform.machine()}".encode()
    return hashlib.sha256(content + b"\0" + interpreter).hexdigest()[:32]


def install_requirements(requirements_file: str, find_links: str | None, install_dir: str) -> str:
    """Steps 1-3: the directory the requirements are installed in, installing them if no job did before."""
    try:
        with open(requirements_file, "rb") as file:
            content = file.read()
    except OSError as error:
        raise PythonEnvironmentError(
            f"python.requirements: cannot read {requirements_file!r} ({error.strerror}); give a requirements file "
            "that exists where the job's TaskManagers run"
        ) from error
    target = os.path.join(install_dir, requirements_key(content))
    if os.path.isdir(target):
        logger.info("python.requirements %s: installed already in %s", requirements_file, target)
        return target
    os.makedirs(install_dir, exist_ok=True)
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # 2: one install at a time per requirements content
        if os.path.isdir(target):
            return target
        staging = tempfile.mkdtemp(dir=install_dir, prefix=os.path.basename(target) + ".installing-")
        try:
            _pip_install(requirements_file, content, find_links, staging)
            os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    logger.info("python.requirements %s: installed in %s", requirements_file, target)
    return target


def _pip_install(requirements_file: str, content: bytes, find_links: str | None, staging: str) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--target",
        staging,
        "--requirement",
        requirements_file,
        "--disable-pip-version-check",
        "--no-input",
        "--no-warn-script-location",
    ]
    if find_links:
        command += ["--no-index", "--find-links", find_links]
    logger.info("python.requirements %s: running %s", requirements_file, " ".join(command))
    completed = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if completed.returncode == 0:
        return
    said = [line for line in completed.stderr.splitlines() if line.strip()]
    said = said or [line for line in completed.stdout.splitlines() if line.strip()] or ["(pip printed nothing)"]
    last = said[-1].strip()
    named = [name for name in requirement_names(content) if name.lower() in last.lower()]
    at = f" at {', '.join(repr(name) for name in named)}" if named else ""
    raise PythonEnvironmentError(
        f"python.requirements: installing {requirements_file} failed{at} (pip exited with {completed.returncode}): "
        f"{last}"
    )


def requirement_names(content: bytes) -> list[str]:
    """The project names a requirements file asks for (options, comments, paths and URLs left out)."""
    names = []
    for raw in content.decode(errors="replace").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-", ".", "/")) or "://" in line:
            continue
        match = _REQUIREMENT_NAME.match(line)
        if match:
            names.append(match.group(1))
    return names


# -- archives ---------------------------------------------------------------------------------------------------


def archive_entries(value: str) -> list[tuple[str, str]]:
    """(archive path, target name) of each comma-separated `path[#target]`; the target defaults to the archive's
    file name, as in PyFlink."""
    entries: list[tuple[str, str]] = []
    for item in value.split(FILE_DELIMITER):
        if not item.strip():
            continue
        path, _, target = item.strip().partition(PARAM_DELIMITER)
        target = target or os.path.basename(path)
        if target in ("", ".", "..") or "/" in target or os.sep in target:
            raise ConfigurationError(
                f"python.archives: {target!r} (for {path}) is not a directory name; give a plain name after '#', "
                "as in 'env.zip#venv'"
            )
        if any(target == other for _, other in entries):
            raise ConfigurationError(
                f"python.archives: two archives are extracted to {target!r}; give each its own name after '#'"
            )
        entries.append((path, target))
    return entries


def extract_archives(value: str, working_directory: str) -> tuple[str, ...]:
    """Extract each archive of `value` into `working_directory/target`; the targets, in order."""
    targets = []
    for path, target in archive_entries(value):
        destination = os.path.join(working_directory, target)
        os.makedirs(destination)
        _extract(path, destination)
        targets.append(target)
        logger.info("python.archives: %s extracted to %s", path, destination)
    return tuple(targets)


def _extract(path: str, destination: str) -> None:
    name = path.lower()
    try:
        if name.endswith(_ZIP_SUFFIXES) or (not name.endswith(_TAR_SUFFIXES) and zipfile.is_zipfile(path)):
            with zipfile.ZipFile(path) as archive:
                for member in archive.infolist():
                    extracted = archive.extract(member, destination)
                    mode = member.external_attr >> 16
                    if mode & 0o777 and not member.is_dir():
                        os.chmod(extracted, mode & 0o777)  # keep the executables of a packed virtualenv
        elif name.endswith(_TAR_SUFFIXES) or tarfile.is_tarfile(path):
            with tarfile.open(path) as archive:
                archive.extractall(destination, filter="data")
        else:
            raise PythonEnvironmentError(
                f"python.archives: {path} is neither a zip nor a tar archive; give a .zip, .tar, .tar.gz or .tgz"
            )
    except (OSError, zipfile.BadZipFile, tarfile.TarError) as error:
        raise PythonEnvironmentError(f"python.archives: cannot extract {path}: {error}") from error
