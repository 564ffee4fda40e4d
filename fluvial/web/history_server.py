"""The history server (Flink's HistoryServer): the dashboard of jobs that have ended, read from the archives
their clusters wrote (`jobmanager.archive.fs.dir`, `archive.py`), after those clusters stopped.

    fluvial history-server [--dir DIR[,DIR...]] [--port 8082] [-D KEY=VALUE ...]

It reads every archive in `historyserver.archive.fs.dir` at start and again every
`historyserver.archive.fs.refresh-interval`, and serves the same dashboard over the archived REST answers: GET
only (there is nothing to act on), `/jobs/overview` listing every archived job, each job's pages as they were when
it ended. A file that is not an archive is skipped with a warning, once.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from fluvial.web import views
from fluvial.web.rest import STATIC

logger = logging.getLogger(__name__)


class ArchiveStore:
    """The archived REST answers of every job found in `directories`, by path; `refresh()` reads new files."""

    def __init__(self, directories: list[str]) -> None:
        self._directories = directories
        self._lock = threading.Lock()
        self._answers: dict[str, str] = {}  # REST path -> JSON text
        self._overviews: dict[str, dict] = {}  # job id -> its /jobs/overview entry
        self._seen: set[str] = set()

    def refresh(self) -> int:
        """Read the archives not read yet; how many were added."""
        import fsspec

        added = 0
        for directory in self._directories:
            file_system, root = fsspec.core.url_to_fs(directory)
            try:
                names = file_system.ls(root, detail=False)
            except FileNotFoundError:
                continue
            for name in names:
                if name in self._seen or name.endswith(".inprogress"):
                    continue
                self._seen.add(name)
                try:
                    with file_system.open(name, "r") as archive:
                        entries = json.load(archive)["archive"]
                    answers = {entry["path"]: entry["json"] for entry in entries}
                    overview = json.loads(answers.pop("/jobs/overview"))["jobs"][0]
                except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
                    logger.warning("%s is not a job archive (%s: %s); skipped", name, type(error).__name__, error)
                    continue
                with self._lock:
                    self._answers.update(answers)
                    self._overviews[overview["jid"]] = overview
                added += 1
        return added

    def answer(self, path: str) -> str | None:
        with self._lock:
            return self._answers.get(path)

    def overviews(self) -> list[dict]:
        with self._lock:
            return list(self._overviews.values())


def create_history_app(store: ArchiveStore, refresh_interval_ms: int) -> Any:
    """The ASGI app: the dashboard over the archived answers of `store`."""

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    def config(request: Request) -> Response:
        return JSONResponse(views.config_json(refresh_interval_ms, history=True))

    def overview(request: Request) -> Response:
        jobs = store.overviews()
        count = lambda state: sum(job["state"] == state for job in jobs)  # noqa: E731
        return JSONResponse(
            {
                "taskmanagers": 0,
                "slots-total": 0,
                "slots-available": 0,
                "jobs-running": 0,
                "jobs-finished": count("FINISHED"),
                "jobs-cancelled": count("CANCELED"),
                "jobs-failed": count("FAILED"),
                "flink-version": views.config_json(0)["flink-version"],
                "flink-commit": "",
                "history": True,
            }
        )

    def jobs_overview(request: Request) -> Response:
        return JSONResponse({"jobs": store.overviews()})

    def jobs(request: Request) -> Response:
        return JSONResponse({"jobs": [{"id": job["jid"], "status": job["state"]} for job in store.overviews()]})

    def task_managers(request: Request) -> Response:
        return JSONResponse({"taskmanagers": []})

    def archived(request: Request) -> Response:
        answer = store.answer(request.url.path)
        if answer is None:
            return JSONResponse(
                {
                    "errors": [
                        f"nothing archived at {request.url.path}: the history server shows the "
                        "jobs in historyserver.archive.fs.dir (GET /jobs/overview lists them)"
                    ]
                },
                status_code=404,
            )
        return Response(answer, media_type="application/json")

    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
            Route("/config", config, methods=["GET"]),
            Route("/overview", overview, methods=["GET"]),
            Route("/jobs", jobs, methods=["GET"]),
            Route("/jobs/overview", jobs_overview, methods=["GET"]),
            Route("/taskmanagers", task_managers, methods=["GET"]),
            Route("/jobs/{rest:path}", archived, methods=["GET"]),
        ]
    )


class HistoryServer:
    """The store, refreshed on a timer thread, served by a WebServer."""

    def __init__(self, directories: list[str], host: str, port: int, refresh_interval_ms: int) -> None:
        self.store = ArchiveStore(directories)
        self._host, self._port, self._interval = host, port, refresh_interval_ms
        self._stopped = threading.Event()
        self._server: Any = None

    def start(self) -> HistoryServer:
        from fluvial.web.server import WebServer

        self.store.refresh()
        app = create_history_app(self.store, self._interval)
        self._server = WebServer(app, self._host, (self._port, self._port), "history server").start()
        threading.Thread(target=self._refresh_until_stopped, name="fluvial-history-refresh", daemon=True).start()
        return self

    @property
    def address(self) -> str:
        return self._server.address

    def _refresh_until_stopped(self) -> None:
        while not self._stopped.wait(self._interval / 1000):
            added = self.store.refresh()
            if added:
                logger.info("the history server found %d new job archive(s)", added)

    def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            self._server.stop()


def directories_of(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()] if value else []
