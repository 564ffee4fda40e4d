"""`~/.fluvial/cluster.json`: where the running session cluster answers, the processes it is made of, and the
access token of its mutating REST routes.

The JobManager writes it once its REST API listens, rewrites it when a TaskManager process is replaced, and
removes it when it shuts down; the CLI reads it when `-m` is not given. Rules:
- Readable by its owner only (mode 0600, in a directory of mode 0700): the token in it lets anyone who reads it
  submit code to the cluster. It is trusted as checkpoints are (`fluvial.common.private_files`): a file owned by
  another user, readable or writable by group or others, or in a directory (or below one) that another user
  could write, is refused with its fix — another user could have forged it, or read its token.
- Written atomically (a temporary file in the same directory, then a rename): a reader never sees half a file.
- Each process is recorded with its start time (Linux: /proc/PID/stat), so a PID the system reused for another
  program is never taken for a cluster process.
- A signal goes only to a process proven to be the cluster's: the PID, its start time, and the cluster's id in
  the environment the process was started with (`FLUVIAL_CLUSTER_ID`, which the JobManager's TaskManagers and
  launcher inherit). A forged or stale file naming another program's PID never gets it signalled. A JobManager
  run in the foreground (`--foreground`) did not start with the id: it is stopped through its REST API or
  Ctrl-C, never by a signal from `fluvial cluster stop`.
`Path.home()` decides where it is (tests set HOME).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from fluvial.common.errors import FluvialError
from fluvial.common.private_files import make_private_dirs, untrusted_reason
from fluvial.common.processes import environment_value, pid_running, process_start_ticks, signal_if

FILE_NAME = "cluster.json"
CLUSTER_ID_VARIABLE = "FLUVIAL_CLUSTER_ID"


class ClusterFileError(FluvialError):
    """The cluster file exists but cannot be read; the message names the file and the fix."""


def fluvial_home() -> Path:
    return Path.home() / ".fluvial"


def cluster_file_path() -> Path:
    return fluvial_home() / FILE_NAME


def log_directory() -> Path:
    return fluvial_home() / "log"


def private_directory(path: Path) -> Path:
    """`path`, created if missing, with mode 0700 for it and every parent this call created (`~/.fluvial` too
    when `~/.fluvial/log` is made first)."""
    make_private_dirs(path)
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

    def belongs_to(self, cluster_id: str) -> bool:
        """This very process runs and was started as a process of the cluster `cluster_id` (module docstring)."""
        return (
            bool(cluster_id)
            and self.start_ticks >= 0
            and self.alive()
            and environment_value(self.pid, CLUSTER_ID_VARIABLE) == cluster_id
        )

    def kill(self, cluster_id: str, number: int = signal.SIGKILL) -> bool:
        """Signal it (SIGKILL by default) if it is proven to be the cluster's; whether a signal was sent."""
        return signal_if(self.pid, number, lambda: self.belongs_to(cluster_id))


@dataclass(frozen=True, slots=True)
class ClusterRecord:
    address: str  # host:port clients connect to
    rest_url: str  # http://host:port, the REST API and the dashboard
    token: str
    jobmanager: ProcessRecord
    taskmanagers: tuple[ProcessRecord, ...] = ()
    log_dir: str = ""
    started_at: str = ""  # ISO 8601, for people
    cluster_id: str = ""  # FLUVIAL_CLUSTER_ID of its processes ("": none can be proven the cluster's)

    @property
    def processes(self) -> list[ProcessRecord]:
        return [self.jobmanager, *self.taskmanagers]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @staticmethod
    def from_json(text: str) -> ClusterRecord:
        document = json.loads(text)
        return ClusterRecord(
            address=str(document["address"]),
            rest_url=str(document["rest_url"]),
            token=str(document["token"]),
            jobmanager=ProcessRecord(**document["jobmanager"]),
            taskmanagers=tuple(ProcessRecord(**record) for record in document.get("taskmanagers", ())),
            log_dir=str(document.get("log_dir", "")),
            started_at=str(document.get("started_at", "")),
            cluster_id=str(document.get("cluster_id", "")),
        )


def write_cluster_file(record: ClusterRecord, path: Path | None = None) -> Path:
    """Write `record` atomically with mode 0600 (see the module docstring)."""
    path = path or cluster_file_path()
    private_directory(path.parent)
    reason = untrusted_reason(path.parent)
    if reason is not None:
        raise ClusterFileError(
            f"refusing to write the cluster's token into {path.parent}: {reason}. Another user "
            f"could read or replace it: `chmod 700 {path.parent}` (and `chown` it to this user)"
        )
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
        info = path.stat()
    except FileNotFoundError:
        return None
    check_trusted_file(path, info)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return ClusterRecord.from_json(text)
    except (ValueError, KeyError, TypeError) as error:
        raise ClusterFileError(
            f"{path} is not a cluster file fluvial can read ({type(error).__name__}: {error}); "
            "if no cluster runs, delete it"
        ) from None


def check_trusted_file(path: Path, info: os.stat_result) -> None:
    """ClusterFileError unless only this user could have written `path` and only this user can read it."""
    reason = untrusted_reason(path)
    if reason is None and stat.S_IMODE(info.st_mode) & 0o077:
        reason = f"file {path} can be read by other users (mode {stat.S_IMODE(info.st_mode):04o}): its token is theirs"
    if reason is not None:
        raise ClusterFileError(
            f"refusing to use {path}: {reason}. A cluster file is trusted as a checkpoint is: "
            "owned by this user, mode 0600, in directories only this user can write. If this "
            "machine's cluster wrote it, `chmod 600` the file and `chmod 700` its directory; "
            "otherwise delete it"
        )


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
