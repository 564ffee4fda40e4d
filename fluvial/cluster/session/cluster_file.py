"""`~/.fluvial/cluster.json`: where the running session cluster answers, the processes it is made of, and the
access token of its mutating REST routes.

The JobManager writes it once its REST API listens, rewrites it when a TaskManager process is replaced, and
removes it when it shuts down; the CLI reads it when `-m` is not given. Rules:
- Readable by its owner only (mode 0600, in a directory of mode 0700): the token in it lets anyone who reads it
  submit code to the cluster.
- Written atomically (a temporary file in the same directory, then a rename): a reader never sees half a file.
- Each process is recorded with its start time (Linux: /proc/PID/stat), so a PID the system reused for another
  program is never taken for a cluster process — `fluvial cluster stop` never signals a stranger.
`Path.home()` decides where it is (tests set HOME).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from fluvial.common.errors import FluvialError
from fluvial.common.processes import kill, pid_running, process_start_ticks

FILE_NAME = "cluster.json"


class ClusterFileError(FluvialError):
    """The cluster file exists but cannot be read; the message names the file and the fix."""


def fluvial_home() -> Path:
    return Path.home() / ".fluvial"


def cluster_file_path() -> Path:
    return fluvial_home() / FILE_NAME


def log_directory() -> Path:
    return fluvial_home() / "log"


def private_directory(path: Path) -> Path:
    """`path`, created if missing, with mode 0700 when this call created it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


@dataclass(frozen=True, slots=True)
class ProcessRecord:
    pid: int
    start_ticks: int = -1  # field 22 of /proc/PID/stat: when the process started; -1 where /proc is missing

    @staticmethod
    def of(pid: int) -> ProcessRecord:
        return ProcessRecord(pid, process_start_ticks(pid))

    def alive(self) -> bool:
        """This very process still runs (not a zombie, not another program that got its PID)."""
        if self.pid <= 0 or not pid_running(self.pid):
            return False
        return self.start_ticks < 0 or process_start_ticks(self.pid) == self.start_ticks

    def kill(self) -> bool:
        """SIGKILL it, if it is still this process; whether a signal was sent."""
        return self.alive() and kill(self.pid)


@dataclass(frozen=True, slots=True)
class ClusterRecord:
    address: str  # host:port clients connect to
    rest_url: str  # http://host:port, the REST API and the dashboard
    token: str
    jobmanager: ProcessRecord
    taskmanagers: tuple[ProcessRecord, ...] = ()
    log_dir: str = ""
    started_at: str = ""  # ISO 8601, for people

    @property
    def processes(self) -> list[ProcessRecord]:
        return [self.jobmanager, *self.taskmanagers]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @staticmethod
    def from_json(text: str) -> ClusterRecord:
        document = json.loads(text)
        return ClusterRecord(
            address=str(document["address"]), rest_url=str(document["rest_url"]), token=str(document["token"]),
            jobmanager=ProcessRecord(**document["jobmanager"]),
            taskmanagers=tuple(ProcessRecord(**record) for record in document.get("taskmanagers", ())),
            log_dir=str(document.get("log_dir", "")), started_at=str(document.get("started_at", "")))


def write_cluster_file(record: ClusterRecord, path: Path | None = None) -> Path:
    """Write `record` atomically with mode 0600 (see the module docstring)."""
    path = path or cluster_file_path()
    private_directory(path.parent)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(record.to_json())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def read_cluster_file(path: Path | None = None) -> ClusterRecord | None:
    """The recorded cluster, or None when there is no file."""
    path = path or cluster_file_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return ClusterRecord.from_json(text)
    except (ValueError, KeyError, TypeError) as error:
        raise ClusterFileError(f"{path} is not a cluster file fluvial can read ({type(error).__name__}: {error}); "
                               "if no cluster runs, delete it") from None


def remove_cluster_file(owner_pid: int, path: Path | None = None) -> bool:
    """Remove the file if it records the JobManager `owner_pid` (never another cluster's file)."""
    path = path or cluster_file_path()
    try:
        record = read_cluster_file(path)
    except ClusterFileError:
        return False
    if record is None or record.jobmanager.pid != owner_pid:
        return False
    path.unlink(missing_ok=True)
    return True
