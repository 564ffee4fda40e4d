"""The REST API (Flink's routes and JSON field names) and the dashboard, as a Starlette app over a
DispatcherView.

Rules:
- GET routes only read: none of them changes a job, triggers a checkpoint or starts anything.
- Every other method needs the cluster's access token, signed or as a bearer token, and answers 401 without
  it, before the request is looked at; the answer to a signed request is signed, and a foreign Host header is
  refused (`fluvial.web.auth`).
- No answer is a pickle: a client never unpickles what a server says (whatever answers at an address could have
  sent it). The one pickle that crosses is the job submission, client to server, from a holder of the token.
- Errors are Flink's: `{"errors": ["what is wrong, and what to do"]}` with 400 (a bad request), 404 (no such
  job, vertex or route), 409 (the job cannot do that now) or 500.
- Handlers are plain functions, run on a thread pool: they wait on JobMaster futures.

Routes:
  GET  /                                 the dashboard (static files under /static)
  GET  /config                           the dashboard's settings
  GET  /overview                         taskmanagers, slots, jobs by state, version
  GET  /jobs                             {"jobs": [{"id", "status"}]}
  POST /jobs                             submit a cloudpickled JobGraph → 202 {"jobid", "jobUrl"}
  GET  /jobs/overview                    every job with its name, state, times and task counts
  GET  /jobs/:jobid                      jid, name, state, times, vertices (with their I/O metrics), plan
  PATCH /jobs/:jobid?mode=cancel         cancel → 202
  GET  /jobs/:jobid/plan                 the dataflow plan
  GET  /jobs/:jobid/details              fluvial's: the JobDetails as JSON (a remote JobClient's get_job_details)
  GET  /jobs/:jobid/metrics[?get=a,b]    the job's metrics (uptime, numRestarts, checkpoints)
  GET  /jobs/:jobid/exceptions           the root exception and the exception history
  GET  /jobs/:jobid/checkpoints          counts, latest, history, summary
  GET  /jobs/:jobid/checkpoints/config   the checkpointing settings
  GET  /jobs/:jobid/vertices/:vid        the vertex and its subtasks (TaskManager, attempt, state, records)
  GET  /jobs/:jobid/vertices/:vid/metrics[?get=...], /watermarks, /backpressure
  POST /jobs/:jobid/savepoints           {"target-directory", "cancel-job"} → 202 {"request-id"}
  GET  /jobs/:jobid/savepoints/:trigger  {"status": {"id": IN_PROGRESS|COMPLETED}, "operation": ...}
  POST /jobs/:jobid/stop                 {"targetDirectory", "drain"} → 202 {"request-id"}
  POST /jobs/:jobid/coordinators/:cid   {"timeout-ms", "close"} → the next collected buffers (see below)
  GET  /taskmanagers                     {"taskmanagers": [{"id", "slotsNumber", "freeSlots", ...}]}
  GET  /jobs/:jobid/config, /taskmanagers/:tmid[/log|/stdout]   the dashboard's pages (pages.py)
  GET  /metrics                          every job's metrics in Prometheus' text format
  DELETE /cluster                        shut the cluster down → 200 {}
  GET  /openapi.json                     these routes as an OpenAPI 3 document (fluvial.web.openapi)

Collected records (`execute_and_collect` against a session cluster) take Flink's coordination-request route.
Flink's client posts a serialized CollectCoordinationRequest (a version and an offset) to the collect sink's
operator coordinator and gets a CollectCoordinationResponse with the next results; here the path names the
collect id (one collect sink each) and the request is "the next buffers": JSON `{"timeout-ms": <long-poll, at
most 30000>, "close": <the client reads no more>}`. The answer is JSON `{"buffers": [<base64>], "ended": bool}`:
each buffer pickled by the TaskManager that sent it (the JobManager never unpickles a record: it has none of the
job's classes), `ended` once the job has ended and every buffer was taken. It is a POST, token-guarded: taking
buffers changes what the next caller gets. fluvial's client signs it and unpickles the buffers only from an
answer signed with the cluster's token (`fluvial.common.request_signing`): records are the job's own objects,
pickled by the TaskManagers that run the job's code, and trusted as that code is — never bytes from whatever
answers at the address.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import pickle
import threading
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from fluvial.cluster.job_details_json import details_to_json
from fluvial.cluster.local_dispatcher import JobSubmissionError, RequestRefused, UnknownJobError
from fluvial.cluster.session.rest_client import JOB_GRAPH_MEDIA_TYPE
from fluvial.common.errors import FluvialError
from fluvial.common.future import CompletableFuture
from fluvial.metrics import prometheus
from fluvial.web import views
from fluvial.web.auth import ANY_HOST, RequestGuard, allowed_hosts
from fluvial.web.dispatcher_view import DispatcherView
from fluvial.web.openapi import openapi_document
from fluvial.web.pages import page_routes, status_metrics

logger = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
COLLECT_MAX_WAIT_MS = 30_000  # a long poll holds a server thread: bounded


class RequestError(Exception):
    """A request that cannot be served, with its HTTP status and the message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


TokenGuard = RequestGuard  # the name before answers were signed


class SavepointOperations:
    """The savepoints and stops requested through the API, by trigger id (Flink's asynchronous operations)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._operations: dict[tuple[str, str], CompletableFuture[str]] = {}

    def add(self, job_id: str, future: CompletableFuture[str]) -> str:
        trigger_id = os.urandom(16).hex()
        with self._lock:
            self._operations[(job_id, trigger_id)] = future
        return trigger_id

    def status(self, job_id: str, trigger_id: str) -> dict[str, Any]:
        with self._lock:
            future = self._operations.get((job_id, trigger_id))
        if future is None:
            raise RequestError(
                404,
                f"there is no savepoint operation {trigger_id} of job {job_id}: use the "
                "request-id that POST /jobs/:jobid/savepoints (or /stop) returned",
            )
        if not future.done():
            return {"status": {"id": "IN_PROGRESS"}}
        error = future.exception()
        if error is None:
            return {"status": {"id": "COMPLETED"}, "operation": {"location": future.result()}}
        return {
            "status": {"id": "COMPLETED"},
            "operation": {
                "failure-cause": {
                    "class": type(error).__name__,
                    "message": str(error),
                    "stack-trace": "".join(traceback.format_exception(error)),
                    "serialized-throwable": "",
                }
            },
        }


def create_app(
    dispatcher: DispatcherView,
    token: str,
    refresh_interval_ms: int = 1000,
    bind_host: str | None = None,
    extra_hosts: Iterable[str] = (),
    archive_directory: str | None = None,
) -> Any:
    """The ASGI app: the REST API and the dashboard over `dispatcher`, mutations guarded by `token`. Given the
    address it is served on, it answers only to the Host names that address and `extra_hosts`
    (rest.allowed-hosts) allow (`fluvial.web.auth.allowed_hosts`); else to any. With `archive_directory`
    (jobmanager.archive.fs.dir), each job is archived there when it ends (archive.py)."""
    if not token:
        raise ValueError("the REST API needs an access token for its mutating routes")
    if archive_directory:
        from fluvial.web.archive import JobArchivist

        JobArchivist(dispatcher, archive_directory).attach()
    api = _Api(dispatcher, refresh_interval_ms)
    routes = [
        Route("/", api.index, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        Route("/config", api.config, methods=["GET"]),
        Route("/overview", api.overview, methods=["GET"]),
        Route("/jobs", api.jobs, methods=["GET"]),
        Route("/jobs", api.submit, methods=["POST"]),
        Route("/jobs/overview", api.jobs_overview, methods=["GET"]),
        Route("/jobs/{job_id}", api.job, methods=["GET"]),
        Route("/jobs/{job_id}", api.terminate, methods=["PATCH"]),
        Route("/jobs/{job_id}/plan", api.plan, methods=["GET"]),
        Route("/jobs/{job_id}/details", api.details, methods=["GET"]),
        Route("/jobs/{job_id}/metrics", api.job_metrics, methods=["GET"]),
        Route("/jobs/{job_id}/exceptions", api.exceptions, methods=["GET"]),
        Route("/jobs/{job_id}/checkpoints", api.checkpoints, methods=["GET"]),
        Route("/jobs/{job_id}/checkpoints/config", api.checkpoint_config, methods=["GET"]),
        Route("/jobs/{job_id}/vertices/{vertex_id}", api.vertex, methods=["GET"]),
        Route("/jobs/{job_id}/vertices/{vertex_id}/metrics", api.vertex_metrics, methods=["GET"]),
        Route("/jobs/{job_id}/vertices/{vertex_id}/watermarks", api.watermarks, methods=["GET"]),
        Route("/jobs/{job_id}/vertices/{vertex_id}/backpressure", api.backpressure, methods=["GET"]),
        Route("/jobs/{job_id}/savepoints", api.savepoint, methods=["POST"]),
        Route("/jobs/{job_id}/savepoints/{trigger_id}", api.savepoint_status, methods=["GET"]),
        Route("/jobs/{job_id}/stop", api.stop, methods=["POST"]),
        Route("/jobs/{job_id}/coordinators/{collect_id}", api.take_results, methods=["POST"]),
        Route("/taskmanagers", api.task_managers, methods=["GET"]),
        *page_routes(dispatcher, RequestError),  # the job configuration and TaskManager pages' routes
        Route("/metrics", api.prometheus, methods=["GET"]),
        Route("/cluster", api.shutdown, methods=["DELETE"]),
    ]
    routes.append(Route("/openapi.json", _openapi_endpoint(routes), methods=["GET"]))
    app = Starlette(
        routes=routes,
        exception_handlers={
            HTTPException: _http_error,
            RequestError: _request_error,
            UnknownJobError: _unknown_job,
            RequestRefused: _refused,
            Exception: _server_error,
        },
    )
    hosts = allowed_hosts(bind_host, extra_hosts) if bind_host is not None else frozenset({ANY_HOST})
    return RequestGuard(app, token, hosts)


def _openapi_endpoint(routes: list) -> Callable[[Request], Response]:
    def openapi(request: Request) -> Response:
        """This API as an OpenAPI 3 document, built from these routes and their descriptions."""
        return JSONResponse(document)

    document = openapi_document([*routes, Route("/openapi.json", openapi, methods=["GET"])])
    return openapi


def create_prometheus_app(dispatcher: DispatcherView) -> Any:
    """The app of `metrics.reporter.prom.port`: the Prometheus text at `/` and `/metrics`, as Flink's
    reporter serves it."""
    api = _Api(dispatcher, 1000)
    return Starlette(
        routes=[Route("/", api.prometheus, methods=["GET"]), Route("/metrics", api.prometheus, methods=["GET"])],
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )


class _Api:
    def __init__(self, dispatcher: DispatcherView, refresh_interval_ms: int) -> None:
        self._dispatcher = dispatcher
        self._refresh_interval_ms = refresh_interval_ms
        self._savepoints = SavepointOperations()

    # -- dashboard and cluster ------------------------------------------------------------------------------------

    def index(self, request: Request) -> Response:
        """The dashboard (an HTML page; its scripts and styles are under /static)."""
        return FileResponse(STATIC / "index.html", media_type="text/html")

    def config(self, request: Request) -> Response:
        """The dashboard's settings: its refresh interval, the version, the time zone."""
        return JSONResponse(views.config_json(self._refresh_interval_ms))

    def overview(self, request: Request) -> Response:
        """The cluster at a glance: TaskManagers, slots (total and free), jobs by state, version."""
        return JSONResponse(views.overview_json(self._dispatcher.overview()))

    def task_managers(self, request: Request) -> Response:
        """The TaskManagers: `{"taskmanagers": [{"id", "slotsNumber", "freeSlots", ...}]}`."""
        return JSONResponse(views.task_managers_json(self._dispatcher.task_managers()))

    def prometheus(self, request: Request) -> Response:
        """Every job's metrics and each TaskManager process's `Status.Python.*` in Prometheus' text format, named
        as Flink's Prometheus reporter names them."""
        text = prometheus.render(self._dispatcher.metrics(), task_managers=self._task_manager_statuses())
        return Response(text, media_type=prometheus.CONTENT_TYPE)

    def _task_manager_statuses(self) -> list[tuple[str, dict[str, float]]]:
        return [(manager.id, status_metrics(manager)) for manager in self._dispatcher.task_managers()]

    # -- jobs -----------------------------------------------------------------------------------------------------

    def jobs(self, request: Request) -> Response:
        """Every job with its state: `{"jobs": [{"id", "status"}]}`."""
        return JSONResponse(views.jobs_json(self._dispatcher.jobs()))

    def jobs_overview(self, request: Request) -> Response:
        """Every job with its name, state, start/end times, duration and task counts by state."""
        return JSONResponse(views.jobs_overview_json(self._dispatcher.jobs()))

    def job(self, request: Request) -> Response:
        """One job: `jid`, name, state, timestamps, its vertices (parallelism, state, I/O metrics) and its plan."""
        return JSONResponse(views.job_json(self._view(request)))

    def details(self, request: Request) -> Response:
        """fluvial's own: the JobDetails, field by field as JSON, for a remote JobClient's get_job_details()."""
        return JSONResponse(details_to_json(self._view(request).details))

    def plan(self, request: Request) -> Response:
        """The job's dataflow plan: `{"plan": {"jid", "name", "nodes": [...]}}`, chained operators per node."""
        return JSONResponse(views.plan_json(self._view(request).details))

    def job_metrics(self, request: Request) -> Response:
        """The job's metrics (uptime, numRestarts, checkpoint counts); `?get=a,b` returns their values."""
        values = self._view(request).details.metric_values()
        return JSONResponse(views.metric_list_json(values, request.query_params.get("get")))

    def exceptions(self, request: Request) -> Response:
        """The job's root exception and its exception history (each with where and when it happened)."""
        limit = request.query_params.get("maxExceptions")
        if limit is not None and not limit.isdigit():
            raise RequestError(400, f"maxExceptions must be a number >= 0, got {limit!r}")
        return JSONResponse(
            views.exceptions_json(self._view(request).details, int(limit) if limit is not None else None)
        )

    def checkpoints(self, request: Request) -> Response:
        """The job's checkpoints: counts, the latest completed/failed/restored, history and a summary."""
        return JSONResponse(views.checkpoints_json(self._view(request).details))

    def checkpoint_config(self, request: Request) -> Response:
        """The job's checkpointing settings: mode, interval, timeout, min pause, concurrency."""
        return JSONResponse(views.checkpoint_config_json(self._view(request).details))

    def vertex(self, request: Request) -> Response:
        """One vertex and its subtasks: TaskManager, attempt, state, records and bytes in and out."""
        view, vertex = self._vertex(request)
        return JSONResponse(views.vertex_json(view, vertex))

    def vertex_metrics(self, request: Request) -> Response:
        """The vertex's task and operator metrics, prefixed by subtask index; `?get=a,b` returns values."""
        view, vertex = self._vertex(request)
        values = views.vertex_metric_values(view, vertex)
        return JSONResponse(views.metric_list_json(values, request.query_params.get("get")))

    def watermarks(self, request: Request) -> Response:
        """Each subtask's current input watermark: `[{"id": "0.currentInputWatermark", "value"}]`."""
        view, vertex = self._vertex(request)
        return JSONResponse(views.watermarks_json(view, vertex))

    def backpressure(self, request: Request) -> Response:
        """Back pressure per subtask (`ok`, `low`, `high`), from its back-pressured time per second."""
        view, vertex = self._vertex(request)
        return JSONResponse(views.backpressure_json(view, vertex))

    def _view(self, request: Request) -> Any:
        return self._dispatcher.job(request.path_params["job_id"])

    def _vertex(self, request: Request) -> tuple[Any, Any]:
        view = self._view(request)
        vertex = views.vertex_by_rest_id(view.details, request.path_params["vertex_id"])
        if vertex is None:
            raise RequestError(
                404,
                f"job {view.details.job_id} has no vertex {request.path_params['vertex_id']}: "
                "GET /jobs/:jobid lists its vertices and their ids",
            )
        return view, vertex

    # -- mutations (token-guarded) --------------------------------------------------------------------------------

    async def submit(self, request: Request) -> Response:
        """Submit a job: the body is a cloudpickled JobGraph; answers 202 `{"jobid", "jobUrl"}`."""
        body = await request.body()
        return await _in_thread(lambda: self._submit(body))

    def _submit(self, body: bytes) -> Response:
        from fluvial.graph.job_graph import JobGraph

        try:
            job_graph = pickle.loads(body)  # noqa: S301 - only a holder of the cluster's token gets here
        except Exception as error:  # noqa: BLE001 - any undecodable body is the client's mistake
            raise RequestError(
                400,
                f"the request body is not a pickled JobGraph ({type(error).__name__}: {error}); "
                f"send cloudpickle.dumps(job_graph) as {JOB_GRAPH_MEDIA_TYPE}",
            ) from None
        if not isinstance(job_graph, JobGraph):
            raise RequestError(400, f"the request body holds a {type(job_graph).__name__}, not a JobGraph")
        try:
            job_id = self._dispatcher.submit_job(job_graph)
        except JobSubmissionError as error:
            raise RequestError(400, str(error)) from None
        return JSONResponse({"jobid": job_id, "jobUrl": f"/jobs/{job_id}"}, status_code=202)

    def terminate(self, request: Request) -> Response:
        """`?mode=cancel`: cancel the job; answers 202."""
        mode = request.query_params.get("mode", "cancel").lower()
        if mode == "stop":
            raise RequestError(
                400, "mode=stop is not supported: stop a job with a savepoint through POST /jobs/:jobid/stop"
            )
        if mode != "cancel":
            raise RequestError(400, f"mode must be 'cancel', got {mode!r}")
        self._dispatcher.cancel_job(request.path_params["job_id"])
        return JSONResponse({}, status_code=202)

    async def savepoint(self, request: Request) -> Response:
        """Trigger a savepoint. Flink's body: `{"target-directory", "cancel-job"}`; answers 202 `{"request-id"}`."""
        return await self._start_operation(
            request, "target-directory", "cancel-job", self._dispatcher.trigger_savepoint
        )

    async def stop(self, request: Request) -> Response:
        """Stop the job with a savepoint. Flink's body: `{"targetDirectory", "drain"}`; answers 202 `{"request-id"}`."""
        return await self._start_operation(request, "targetDirectory", "drain", self._dispatcher.stop_with_savepoint)

    async def _start_operation(
        self,
        request: Request,
        directory_key: str,
        flag_key: str,
        start: Callable[[str, str | None, bool], CompletableFuture[str]],
    ) -> Response:
        body = await _json_body(request)
        directory = _optional_text(body, directory_key)
        flag = _optional_flag(body, flag_key)
        job_id = request.path_params["job_id"]
        return await _in_thread(lambda: self._operation(job_id, lambda: start(job_id, directory, flag)))

    def _operation(self, job_id: str, start: Callable[[], CompletableFuture[str]]) -> Response:
        self._dispatcher.job(job_id)  # an unknown job is a 404 here, not a failed operation later
        try:
            future = start()
        except (RuntimeError, NotImplementedError, ValueError, FluvialError) as error:  # the job cannot, now
            raise RequestError(409, str(error)) from None
        return JSONResponse({"request-id": self._savepoints.add(job_id, future)}, status_code=202)

    def savepoint_status(self, request: Request) -> Response:
        """The state of a savepoint or stop: `{"status": {"id": IN_PROGRESS|COMPLETED}, "operation"}`
        with the savepoint's location or the failure."""
        return JSONResponse(self._savepoints.status(request.path_params["job_id"], request.path_params["trigger_id"]))

    async def take_results(self, request: Request) -> Response:
        """`execute_and_collect` against a cluster: the next collected buffers; body `{"timeout-ms", "close"}`
        (the module docstring says how this maps to Flink's coordination-request route)."""
        body = await _json_body(request)
        wait_ms = body.get("timeout-ms", 1000)
        if isinstance(wait_ms, bool) or not isinstance(wait_ms, int) or not 0 <= wait_ms <= COLLECT_MAX_WAIT_MS:
            raise RequestError(
                400, f"'timeout-ms' must be a number of milliseconds from 0 to {COLLECT_MAX_WAIT_MS}, got {wait_ms!r}"
            )
        close = _optional_flag(body, "close")
        job_id, collect_id = request.path_params["job_id"], request.path_params["collect_id"]
        buffers, ended = await _in_thread(
            lambda: self._dispatcher.take_results(job_id, collect_id, wait_ms / 1000, close)
        )
        return JSONResponse(
            {"buffers": [base64.b64encode(buffer).decode("ascii") for buffer in buffers], "ended": ended}
        )

    def shutdown(self, request: Request) -> Response:
        """Shut the cluster down (Flink's DELETE /cluster): answers 200 `{}`, then every process exits."""
        self._dispatcher.shutdown_cluster()
        return JSONResponse({})


async def _in_thread(call: Callable[[], Any]) -> Any:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(call)


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as error:
        raise RequestError(400, f"the request body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    return body


def _optional_text(body: dict, key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise RequestError(400, f"'{key}' must be a string (a directory), got {value!r}")
    return value


def _optional_flag(body: dict, key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise RequestError(400, f"'{key}' must be true or false, got {value!r}")
    return value


async def _http_error(request: Request, error: Exception) -> Response:
    status = getattr(error, "status_code", 500)
    detail = {
        404: f"no such route: {request.method} {request.url.path}",
        405: f"{request.method} is not allowed on {request.url.path}",
    }.get(status, str(error))
    return JSONResponse({"errors": [detail]}, status_code=status)


async def _request_error(request: Request, error: Exception) -> Response:
    return JSONResponse({"errors": [str(error)]}, status_code=getattr(error, "status", 400))


async def _unknown_job(request: Request, error: Exception) -> Response:
    return JSONResponse({"errors": [str(error)]}, status_code=404)


async def _refused(request: Request, error: Exception) -> Response:
    return JSONResponse({"errors": [str(error)]}, status_code=409)


async def _server_error(request: Request, error: Exception) -> Response:
    logger.error("REST request %s %s failed", request.method, request.url.path, exc_info=error)
    return JSONResponse({"errors": [f"internal error: {type(error).__name__}: {error}"]}, status_code=500)
