"""The JobClient of a job on a session cluster: PyFlink's JobClient over the cluster's REST API.

- Status, cancel, savepoints and stop are REST calls; savepoints and stops are Flink's asynchronous operations,
  polled until they complete (on a thread of their own: the futures return at once, as PyFlink's do).
- The job's result is polled too: a watcher thread reads the job's details until it has ended, then completes
  `get_job_execution_result()` with the JobExecutionResult or the exception `execute()` raises — for a failure,
  a JobExecutionException whose cause carries the user's exception name, message and traceback text from the
  cluster's exception history (so the CLI shows the user's own frames, as for an embedded job). Progress
  listeners (the CLI's console display) hear each poll, and the last before the result completes.
- A job that waits for task slots says so every `WAIT_REPORT_SECONDS`: its progress carries what it waits on
  (the console shows it), and a client without progress listeners writes the sentence to stderr itself.
- `collect_results` reads `execute_and_collect`'s records through the collect route (a bounded long poll).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fluvial.cluster.session.rest_client import ClusterRequestError, ClusterUnreachable, RestClusterClient
from fluvial.common.errors import InvalidJobError, JobCancelledException, JobExecutionException
from fluvial.common.future import CompletableFuture
from fluvial.common.job_client import JobClient
from fluvial.common.job_execution_result import JobExecutionResult
from fluvial.common.job_id import JobID
from fluvial.common.job_status import JobStatus
from fluvial.datastream.closeable_iterator import CloseableIterator

if TYPE_CHECKING:
    from fluvial.cluster.job_details import JobDetails

T = TypeVar("T")

logger = logging.getLogger(__name__)

FIRST_POLL_SECONDS = 0.05  # the watcher's first wait; doubled up to the longest
LONGEST_POLL_SECONDS = 0.5
LOST_CONTACT_SECONDS = 30.0  # the cluster stops answering this long: the job's result is a failure
COLLECT_WAIT_MS = 5_000
WAIT_REPORT_SECONDS = 5.0  # how often a job waiting for task slots is said to wait


@dataclass(frozen=True, slots=True)
class VertexProgress:
    name: str
    parallelism: int
    status: str
    records_in: int
    records_out: int


@dataclass(frozen=True, slots=True)
class JobProgress:
    """What the console shows of a running job: its state, each vertex's records, its checkpoints."""

    job_id: str
    name: str
    state: str
    duration_ms: int
    vertices: tuple[VertexProgress, ...]
    checkpoints_completed: int
    checkpoints_failed: int
    checkpoints_in_progress: int
    waiting_for_slots: str | None = None  # what a job that waits for task slots waits on, in a sentence

    @staticmethod
    def of(job: dict[str, Any], checkpoints: dict[str, Any]) -> JobProgress:
        counts = checkpoints.get("counts", {})
        vertices = tuple(
            VertexProgress(
                v["name"], v["parallelism"], v["status"], v["metrics"]["read-records"], v["metrics"]["write-records"]
            )
            for v in job["vertices"]
        )
        return JobProgress(
            job["jid"],
            job["name"],
            job["state"],
            job["duration"],
            vertices,
            counts.get("completed", 0),
            counts.get("failed", 0),
            counts.get("in_progress", 0),
            slot_wait_of(job),
        )


def slot_wait_of(job: dict[str, Any]) -> str | None:
    """The sentence saying what the job waits for, while it waits for task slots."""
    wait = job.get("waiting-for-slots")
    return wait["description"] if wait else None


class ProgressListener(Protocol):
    def progress(self, progress: JobProgress) -> None:
        """A poll of the running job (on the watcher thread)."""
        ...

    def finished(self, progress: JobProgress) -> None:
        """The job has ended: its last figures, before its result completes."""
        ...


class RemoteJobClient(JobClient):
    def __init__(self, rest: RestClusterClient, job_id: str, attached: bool = True) -> None:
        """`attached`: this program waits for the job (execute(), execute_and_collect): the watcher starts now."""
        self._rest = rest
        self._job_id = job_id
        self.attached = attached
        self.detached = not attached  # a detached job runs on when this client goes away: never cancelled here
        self._result: CompletableFuture[JobExecutionResult] = CompletableFuture()
        self._listeners: list[ProgressListener] = []
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()
        if attached:
            self._watch_in_background()

    @property
    def rest(self) -> RestClusterClient:
        return self._rest

    def get_job_id(self) -> JobID:
        return JobID(self._job_id)

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        return _now(lambda: JobStatus[self._rest.job(self._job_id)["state"]])

    def get_job_details(self) -> CompletableFuture[JobDetails]:
        return _now(lambda: self._rest.details(self._job_id))

    def cancel(self) -> CompletableFuture[None]:
        """Sent before it returns: a program that cancels its job and exits leaves nothing running."""
        return _now(lambda: self._rest.cancel(self._job_id))

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture[str]:
        def take() -> str:
            return self._rest.savepoint_path(
                self._job_id, self._rest.trigger_savepoint(self._job_id, savepoint_directory)
            )

        return _in_background(take, "savepoint")

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> CompletableFuture[str]:
        def stop() -> str:
            trigger = self._rest.stop_with_savepoint(self._job_id, savepoint_directory, advance_to_end_of_event_time)
            return self._rest.savepoint_path(self._job_id, trigger)

        return _in_background(stop, "stop")

    def get_job_execution_result(self, user_class_loader: Any = None) -> CompletableFuture[JobExecutionResult]:
        self._watch_in_background()
        return self._result

    def add_progress_listener(self, listener: ProgressListener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def collect_results(self, collect_id: str) -> CloseableIterator:
        if not self.attached:
            raise InvalidJobError(
                "execute_and_collect needs an attached submission (its records come back to this "
                "program): run without -d / --detached"
            )
        return CloseableIterator(self, RemoteResultBuffer(self._rest, self._job_id, collect_id))

    # -- the watcher ---------------------------------------------------------------------------------------------

    def _watch_in_background(self) -> None:
        with self._lock:
            if self._watcher is not None:
                return
            self._watcher = threading.Thread(
                target=self._watch, name=f"fluvial-job-watch-{self._job_id[:8]}", daemon=True
            )
        self._watcher.start()

    def _watch(self) -> None:
        delay = FIRST_POLL_SECONDS
        silent_since: float | None = None
        reported_wait = -WAIT_REPORT_SECONDS
        while True:
            try:
                job = self._rest.job(self._job_id)
                progress = self._progress(job)
            except ClusterUnreachable as error:
                silent_since = silent_since or time.monotonic()
                if time.monotonic() - silent_since > LOST_CONTACT_SECONDS:
                    self._fail(f"the cluster stopped answering while job {self._job_id} ran: {error}")
                    return
                time.sleep(LONGEST_POLL_SECONDS)
                continue
            except ClusterRequestError as error:
                self._fail(f"the cluster cannot say how job {self._job_id} goes: {error}")
                return
            silent_since = None
            status = JobStatus[job["state"]]
            if status.is_globally_terminal:
                self._finish(job, status, progress)
                return
            self._tell(progress, final=False)
            waiting = slot_wait_of(job)
            if waiting and progress is None and time.monotonic() - reported_wait >= WAIT_REPORT_SECONDS:
                reported_wait = time.monotonic()
                print(f"Job '{job['name']}' ({self._job_id}) is {waiting}", file=sys.stderr, flush=True)
            time.sleep(delay)
            delay = min(delay * 2, LONGEST_POLL_SECONDS)

    def _progress(self, job: dict[str, Any]) -> JobProgress | None:
        with self._lock:
            listening = bool(self._listeners)
        return JobProgress.of(job, self._rest.checkpoints(self._job_id)) if listening else None

    def _tell(self, progress: JobProgress | None, final: bool) -> None:
        if progress is None:
            return
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                (listener.finished if final else listener.progress)(progress)
            except Exception:  # noqa: BLE001 - a broken display must not lose the job's result
                logger.exception("a progress listener of job %s failed", self._job_id)

    def _finish(self, job: dict[str, Any], status: JobStatus, progress: JobProgress | None) -> None:
        try:
            outcome = self._outcome(job, status)
        except (ClusterUnreachable, ClusterRequestError) as error:
            outcome = JobExecutionException(
                f"job {self._job_id} ended {status.name}; its failure could not be read: {error}", self._job_id
            )
        self._tell(progress, final=True)
        if isinstance(outcome, BaseException):
            self._result.set_exception(outcome)
        else:
            self._result.set_result(outcome)

    def _outcome(self, job: dict[str, Any], status: JobStatus) -> JobExecutionResult | BaseException:
        name = job["name"]
        if status is JobStatus.FINISHED:
            return JobExecutionResult(JobID(self._job_id), job["duration"])
        if status is JobStatus.CANCELED:
            return JobCancelledException(f"Job '{name}' ({self._job_id}) was cancelled", self._job_id)
        return remote_failure(name, self._job_id, self._rest.exceptions(self._job_id))

    def _fail(self, message: str) -> None:
        self._result.set_exception(JobExecutionException(message, self._job_id))


def remote_failure(name: str, job_id: str, exceptions: dict[str, Any]) -> JobExecutionException:
    """The JobExecutionException of a failed job from its exception history (GET /jobs/:jobid/exceptions): the
    same message an embedded job's has, caused by the user's exception as far as text can carry it."""
    from fluvial.cluster.process.protocol import RemoteTaskError, RemoteTraceback

    entries = exceptions.get("exceptionHistory", {}).get("entries") or []
    if not entries:
        return JobExecutionException(f"Job '{name}' ({job_id}) failed; the cluster recorded no exception", job_id)
    root = entries[0]
    error = RemoteTaskError(root["exceptionName"], root["message"])
    if root.get("stacktrace"):
        error.__cause__ = RemoteTraceback(root["stacktrace"])
    if root.get("taskName") and root.get("operatorName"):
        where = f"operator '{root['operatorName']}' in task {root['taskName']} raised "
    else:
        where = ""
    failure = JobExecutionException(f"Job '{name}' ({job_id}) failed: {where}{error}", job_id)
    failure.__cause__ = error
    return failure


class RemoteResultBuffer:
    """The ResultBuffer (fluvial.datastream.closeable_iterator) of a job on a session cluster: its collected
    buffers, taken through the collect route a long poll at a time."""

    END = object()

    def __init__(self, rest: RestClusterClient, job_id: str, collect_id: str) -> None:
        self._rest = rest
        self._job_id = job_id
        self._collect_id = collect_id
        self._pending: deque[list[Any]] = deque()  # buffers, each a list of records
        self._ended = False
        self.closed = threading.Event()

    def take(self) -> object:
        while not self._pending:
            if self._ended:
                return self.END
            buffers, self._ended = self._rest.take_results(self._job_id, self._collect_id, COLLECT_WAIT_MS)
            self._pending.extend(buffers)
        return self._pending.popleft()

    def close(self) -> None:
        """The client reads no more: the cluster drops the buffer (best effort: the job is cancelled anyway)."""
        self.closed.set()
        self._pending.clear()
        if not self._ended:
            try:
                self._rest.take_results(self._job_id, self._collect_id, 0, close=True)
            except (ClusterUnreachable, ClusterRequestError) as error:
                logger.debug("closing collect %s of job %s: %s", self._collect_id, self._job_id, error)
            self._ended = True


def _now(call: Callable[[], T]) -> CompletableFuture[T]:
    """A completed future of `call()` (its result, or its exception)."""
    future: CompletableFuture[T] = CompletableFuture()
    try:
        future.set_result(call())
    except Exception as error:  # noqa: BLE001 - handed to whoever reads the future
        future.set_exception(error)
    return future


def _in_background(call: Callable[[], T], what: str) -> CompletableFuture[T]:
    """A future of `call()`, run on a thread of its own (a REST call may wait)."""
    future: CompletableFuture[T] = CompletableFuture()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as error:  # noqa: BLE001 - handed to whoever waits on the future
            future.set_exception(error)

    threading.Thread(target=run, name=f"fluvial-rest-{what}", daemon=True).start()
    return future
