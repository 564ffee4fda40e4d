"""The REST routes behind the dashboard's job configuration and TaskManager pages (Flink's routes and fields):

GET /jobs/:jobid/config              {"jid", "name", "execution-config": {execution-mode, restart-strategy,
                                      job-parallelism, object-reuse-mode, user-config, configuration}}
GET /taskmanagers/:tmid              the TaskManager (slots, hardware) and its process's Status.* metrics
GET /taskmanagers/:tmid/metrics[?get=a,b]  its process's Status.Python.* metrics, as Flink lists a TaskManager's
GET /taskmanagers/:tmid/log          the end of the log its records go to (text)
GET /taskmanagers/:tmid/stdout       the end of the file what its jobs print goes to (text)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from fluvial.common.logs import records_marked
from fluvial.metrics.process_status import process_status
from fluvial.web.views import metric_list_json

LOG_TAIL_BYTES = 1 << 20  # a page shows the last megabyte of a log


def page_routes(dispatcher: Any, request_error: type[Exception]) -> list[Route]:
    """The routes, over `dispatcher` (a DispatcherView); `request_error(status, message)` is the REST API's error."""
    pages = _Pages(dispatcher, request_error)
    return [
        Route("/jobs/{job_id}/config", pages.job_config, methods=["GET"]),
        Route("/taskmanagers/{tm_id}", pages.task_manager, methods=["GET"]),
        Route("/taskmanagers/{tm_id}/metrics", pages.metrics, methods=["GET"]),
        Route("/taskmanagers/{tm_id}/log", pages.log, methods=["GET"]),
        Route("/taskmanagers/{tm_id}/stdout", pages.stdout, methods=["GET"]),
    ]


class _Pages:
    def __init__(self, dispatcher: Any, request_error: type[Exception]) -> None:
        self._dispatcher = dispatcher
        self._error = request_error

    def job_config(self, request: Request) -> Response:
        """The job's configuration: `{"jid", "name", "execution-config": {execution-mode, restart-strategy,
        job-parallelism, user-config, configuration}}`.
        """
        details = self._dispatcher.job(request.path_params["job_id"]).details
        return JSONResponse({"jid": details.job_id, "name": details.name, "execution-config": details.execution_config})

    def task_manager(self, request: Request) -> Response:
        """One TaskManager: slots, hardware, and its process's `Status.Python.*` metrics (CPU, memory, threads,
        garbage collections).
        """
        manager = self._manager(request)
        return JSONResponse(
            {
                "id": manager.id,
                "path": manager.path,
                "dataPort": manager.data_port,
                "pid": manager.pid,
                "timeSinceLastHeartbeat": manager.last_heartbeat,
                "slotsNumber": manager.slots,
                "freeSlots": manager.free_slots,
                "hardware": {"cpuCores": manager.cpu_cores, "physicalMemory": manager.physical_memory},
                "metrics": status_metrics(manager),
                "logFile": manager.log_file,
                "stdoutFile": manager.stdout_file,
            }
        )

    def metrics(self, request: Request) -> Response:
        """The TaskManager's process metrics (`Status.Python.CPU.Load`, `...Memory.RSS`, `...Threads.Count`, ...):
        without `get`, their ids; with `?get=a,b`, those ids and their values (Flink's metric list).
        """
        values = status_metrics(self._manager(request))
        return JSONResponse(metric_list_json(values, request.query_params.get("get")))

    def log(self, request: Request) -> Response:
        """The end (the last MiB) of the log file the TaskManager's records go to, as text: only its own records
        when that file is shared with the JobMaster and other TaskManagers (`?all` shows every record).
        """
        manager = self._manager(request)
        text = _tail(manager.log_file, "its log")
        if manager.log_marker and "all" not in request.query_params:
            text = records_marked(text, manager.log_marker)
            text = text or f"(no record of this TaskManager yet in {manager.log_file}; ?all shows every record)\n"
        return PlainTextResponse(text)

    def stdout(self, request: Request) -> Response:
        """The end of the file what the TaskManager's jobs print goes to, as text (an embedded job's TaskManager
        processes have their output copied to `job-<id>.out` in the log directory; TaskManager threads print to
        the program's terminal only).
        """
        manager = self._manager(request)
        if not manager.stdout_file:
            return PlainTextResponse(
                "This TaskManager is a thread of the program that runs the job (local.taskmanager.mode thread): "
                "what it prints goes to that program's terminal; see there.\n"
            )
        return PlainTextResponse(_tail(manager.stdout_file, "what its jobs print"))

    def _manager(self, request: Request) -> Any:
        wanted = request.path_params["tm_id"]
        for manager in self._dispatcher.task_managers():
            if manager.id == wanted:
                return manager
        raise self._error(404, f"there is no TaskManager {wanted}: GET /taskmanagers lists them")


def status_metrics(manager: Any) -> dict[str, float]:
    """The `Status.Python.*` metrics of a TaskManager's process now (none when it has no readable process)."""
    status = process_status(manager.pid, manager.gc_collections) if manager.pid else None
    return status.metrics() if status is not None else {}


def _tail(path: str, what: str) -> str:
    if not path:
        return f"({what} is not written to a file)\n"
    try:
        with open(Path(path), "rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - LOG_TAIL_BYTES))
            text = file.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return f"({what}: {path} has nothing yet)\n"
    return text if size <= LOG_TAIL_BYTES else text.split("\n", 1)[-1]
