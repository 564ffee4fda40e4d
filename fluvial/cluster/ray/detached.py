"""Detached submission (`execution.attached: false`, `fluvial run -d`): the JobMaster runs as a named detached Ray
actor, so the client may leave while its job runs.

Numbered:
1. The client checks that the job's functions pickle, cloudpickles the JobGraph and creates the actor
   `fluvial-job-<job id>` in the Ray namespace `fluvial` (lifetime detached, no CPU of its own, the job's
   runtime environment: it unpickles the job's functions). Its `start` runs the job as an attached client would
   — a RayCluster in the actor's process: the placement group, TaskManager actors (owned by it, so they end
   with it), their control connections back to it — and answers once the job is deployed, or raises why it
   could not be (too few CPUs, storage the nodes cannot share, ...), which the client raises in turn.
2. Any process connected to the cluster reaches the job with `DetachedJobClient.of(job_id)`: status, cancel,
   savepoints, the result. A client waiting for the result does not hold up the others (the actor serves
   several calls at once).
3. print() and the logs of the job's functions arrive in the JobMaster actor's process: in Ray's log files, and
   on the submitting client's console for as long as it stays connected.
4. After its job ended the actor keeps the outcome for the retention the client chose (RESULT_RETENTION_S by
   default), then ends. Ray never restarts it (max_restarts=0): a JobMaster actor that dies ends its job — its
   TaskManager actors go with it. Restarting it from the latest checkpoint (Flink's high availability) is not
   built.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from fluvial.cluster.process.protocol import sendable_failure, with_remote_traceback
from fluvial.cluster.ray.connection import require_connection
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.future import CompletableFuture
from fluvial.common.job_client import JobClient
from fluvial.common.job_execution_result import JobExecutionResult
from fluvial.common.job_id import JobID
from fluvial.common.job_status import JobStatus

if TYPE_CHECKING:
    from fluvial.cluster.job_details import JobDetails

T = TypeVar("T")

logger = logging.getLogger(__name__)

NAMESPACE = "fluvial"
RESULT_RETENTION_S = 600.0
OUTCOME_POLL_S = 5.0  # a client waiting for the result asks again this often (a long poll of the actor)
CONCURRENT_CALLS = 8


def actor_name(job_id: str) -> str:
    return f"fluvial-job-{job_id}"


@dataclass(eq=False)
class JobOutcome:
    """How a detached job ended, as it crosses from its JobMaster actor to a client (`error` and
    `traceback_text` as a TaskFailure has them, so the traceback text comes back the same way)."""

    status: str  # a JobStatus name
    runtime_ms: int
    message: str | None = None  # the JobExecutionException's, when the job did not finish
    error: BaseException | None = None  # its cause: the user's exception, or a stand-in when it does not pickle
    traceback_text: str = ""


class JobMasterActor:
    """The JobMaster of one detached job, in a Ray actor (made an actor class by `actor.actor_class`)."""

    def __init__(self) -> None:
        self._client: Any = None
        self._outcome: JobOutcome | None = None
        self._ended = threading.Event()

    def start(
        self, job_graph_payload: bytes, configuration: dict[str, str], runtime_env: dict[str, Any], retention_s: float
    ) -> None:
        from fluvial.cluster.ray.cluster import RayCluster
        from fluvial.cluster.ray.connection import connect
        from fluvial.cluster.ray.settings import RaySettings
        from fluvial.common.configuration import Configuration
        from fluvial.common.wire import loads_code

        job_graph = loads_code(job_graph_payload)
        config = Configuration()
        for key, value in configuration.items():
            config.set_string(key, value)
        cluster = RayCluster(config, RaySettings.from_configuration(config), connect(None), runtime_env)
        self._client = cluster.submit(job_graph)
        self._client.get_job_execution_result().add_done_callback(lambda done: self._end(done, retention_s))

    def status(self) -> str:
        status: JobStatus = self._client.get_job_status().result()
        return status.name

    def details(self) -> JobDetails:
        """The job's JobDetails (plain data: it pickles to the caller as it is)."""
        details: JobDetails = self._client.get_job_details().result()
        return details

    def cancel(self) -> None:
        self._client.cancel()

    def savepoint(self, directory: str | None, stop: bool, drain: bool = False) -> str:
        client = self._client
        path: str = (
            client.stop_with_savepoint(drain, directory) if stop else client.trigger_savepoint(directory)
        ).result()
        return path

    def outcome(self, wait_s: float) -> JobOutcome | None:
        """The job's outcome once it ended, else None after `wait_s`."""
        self._ended.wait(wait_s)
        return self._outcome

    def _end(self, result: CompletableFuture[JobExecutionResult], retention_s: float) -> None:
        error = result.exception()
        status = self._client.get_job_status().result()
        if error is None:
            self._outcome = JobOutcome(status.name, result.result().get_net_runtime())
        else:
            cause = error.__cause__ or error
            text = "".join(traceback.format_exception(cause))
            sendable = sendable_failure(JobOutcome(status.name, 0, str(error), cause, text))
            self._outcome = sendable
        self._ended.set()
        logger.info(
            "detached job %s ended %s; its JobMaster actor leaves in %.0f s",
            self._client.get_job_id(),
            status.name,
            retention_s,
        )
        threading.Timer(retention_s, _leave).start()


def _leave() -> None:
    """End this actor after the calls it was sent (on a thread of its own, never Ray's)."""
    import ray

    ray.get_runtime_context().current_actor.__ray_terminate__.remote()


def submit_detached(
    job_graph: Any, configuration: Any, runtime_env: dict[str, Any], retention_s: float | None = None
) -> DetachedJobClient:
    """Step 1: the job's JobMaster actor, started; its client. Raises what kept the job from starting."""
    import ray

    from fluvial.cluster.code_shipping import prepare_for_shipping
    from fluvial.cluster.ray.actor import actor_class
    from fluvial.common.wire import dumps_code

    prepare_for_shipping(job_graph)
    actor = (
        actor_class(JobMasterActor)
        .options(
            name=actor_name(job_graph.job_id),
            namespace=NAMESPACE,
            lifetime="detached",
            num_cpus=0,
            max_concurrency=CONCURRENT_CALLS,
            runtime_env=runtime_env or None,
        )
        .remote()
    )
    try:
        ray.get(
            actor.start.remote(
                dumps_code(job_graph),
                configuration.to_dict(),
                runtime_env,
                RESULT_RETENTION_S if retention_s is None else retention_s,
            )
        )
    except ray.exceptions.RayTaskError as error:
        ray.kill(actor, no_restart=True)
        raise error.cause from None  # as an attached submission would raise it
    print(f"Job has been submitted with JobID {job_graph.job_id}", flush=True)  # Flink's line
    logger.info(
        "job %s (%s) submitted detached: its JobMaster is the Ray actor %s in namespace %s",
        job_graph.job_name,
        job_graph.job_id,
        actor_name(job_graph.job_id),
        NAMESPACE,
    )
    return DetachedJobClient(actor, job_graph.job_id)


class DetachedJobClient(JobClient):
    """A JobClient over a detached job's JobMaster actor (step 2). Every method returns a future at once; the Ray
    call runs on a thread of its own."""

    detached = True  # the job runs on when this client goes away: nothing to cancel when it does

    def __init__(self, actor: Any, job_id: str) -> None:
        self._actor = actor
        self._job_id = job_id
        self._result: CompletableFuture[JobExecutionResult] | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, job_id: str) -> DetachedJobClient:
        """The client of detached job `job_id`, from any process connected to the job's Ray cluster."""
        import ray

        try:
            return cls(ray.get_actor(actor_name(job_id), namespace=NAMESPACE), job_id)
        except ValueError:
            raise LookupError(
                f"no detached job {job_id} on this Ray cluster: it never ran here, or it ended more "
                "than its result retention ago"
            ) from None

    def get_job_id(self) -> JobID:
        return JobID(self._job_id)

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        return self._call(lambda: JobStatus[self._remote("status")])

    def get_job_details(self) -> CompletableFuture[JobDetails]:
        return self._call(lambda: self._remote("details"))

    def cancel(self) -> CompletableFuture[None]:
        return self._call(lambda: self._remote("cancel"))

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture[str]:
        return self._call(lambda: self._remote("savepoint", savepoint_directory, False))

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> CompletableFuture[str]:
        return self._call(lambda: self._remote("savepoint", savepoint_directory, True, advance_to_end_of_event_time))

    def get_job_execution_result(self, user_class_loader: Any = None) -> CompletableFuture[JobExecutionResult]:
        with self._lock:
            if self._result is None:
                self._result = self._call(self._wait_for_outcome)
            return self._result

    def collect_results(self, collect_id: str) -> Any:
        raise RuntimeError("execute_and_collect needs an attached job: its records come to the client that waits")

    def _wait_for_outcome(self) -> JobExecutionResult:
        while (outcome := self._remote("outcome", OUTCOME_POLL_S)) is None:
            pass
        if outcome.status == JobStatus.FINISHED.name:
            return JobExecutionResult(JobID(self._job_id), outcome.runtime_ms)
        kind = JobCancelledException if outcome.status == JobStatus.CANCELED.name else JobExecutionException
        error = kind(outcome.message or f"job {self._job_id} ended {outcome.status}", self._job_id)
        error.__cause__ = with_remote_traceback(outcome).error
        raise error

    def _remote(self, method: str, *args: Any) -> Any:
        """The answer of the JobMaster actor's `method(*args)` (while this process is connected to Ray)."""
        require_connection(
            f"{method} of detached job {self._job_id} (it runs on; DetachedJobClient.of(job_id) "
            "reaches it again after ray.init)"
        )
        return self._get(getattr(self._actor, method).remote(*args))

    def _get(self, reference: Any) -> Any:
        import ray

        try:
            return ray.get(reference)
        except ray.exceptions.RayActorError as error:
            raise JobExecutionException(
                f"the JobMaster actor of detached job {self._job_id} is gone: {error}", self._job_id
            ) from None
        except ray.exceptions.RayTaskError as error:
            raise error.cause from None

    @staticmethod
    def _call(work: Callable[[], T]) -> CompletableFuture[T]:
        future: CompletableFuture[T] = CompletableFuture()

        def run() -> None:
            try:
                future.set_result(work())
            except BaseException as error:  # noqa: BLE001 - the future carries it
                future.set_exception(error)

        threading.Thread(target=run, name="fluvial-detached-job-call", daemon=True).start()
        return future
