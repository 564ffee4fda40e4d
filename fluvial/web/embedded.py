"""The REST API, dashboard and Prometheus endpoint of an embedded job.

`rest.port` (with `rest.bind-address`) in a job's configuration serves the REST API and the dashboard for the
MiniCluster the job runs on; `metrics.reporter.prom.port` serves its metrics in Prometheus' text format. Both
listen before the job starts and stop when it ends (and with it, any job submitted through that REST API) —
unless `local.rest.keep-serving`, which `fluvial run --web` sets: then they serve on, so the dashboard of a job
that ended can still be read, until `stop_kept_servers()` (the CLI calls it on Ctrl-C) or the program's exit.
The access token of the mutating routes is new for each server; the JobClient carries it (`client.web`).

For the command line, `web_configuration(port, bind_address)` gives the keys `fluvial run --web` sets.
"""

from __future__ import annotations

import atexit
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fluvial.cluster.local_dispatcher import LocalDispatcher
from fluvial.cluster.local_executor import LocalExecutor
from fluvial.common.configuration import Configuration
from fluvial.web.archive import ARCHIVE_KEY, JobArchivist
from fluvial.web.rest import create_app, create_prometheus_app
from fluvial.web.server import WebServer

logger = logging.getLogger(__name__)

ARCHIVE_WAIT_SECONDS = 10.0  # at the program's exit, how long an archive still being written is waited for


@dataclass(frozen=True)
class WebEndpoint:
    """Where an embedded job's REST API and dashboard answer, the token its mutating routes need, and where its
    Prometheus endpoint answers (None when not asked for)."""

    address: str | None
    token: str
    prometheus_address: str | None
    stop: Callable[[], None] | None = field(default=None, compare=False, repr=False)  # stops the servers


def web_configuration(
    port: int = 8081, bind_address: str = "127.0.0.1", prometheus_port: int | None = None
) -> Configuration:
    """The configuration that serves a job's REST API and dashboard on `port` (and its metrics for Prometheus on
    `prometheus_port`): what `fluvial run --web` adds to the jobs it runs."""
    configuration = Configuration()
    configuration.set_string("rest.port", str(port))
    configuration.set_string("rest.bind-address", bind_address)
    if prometheus_port is not None:
        configuration.set_string("metrics.reporter.prom.port", str(prometheus_port))
    configuration.validate()
    return configuration


class EmbeddedWeb:
    """The servers of one embedded job (and of the jobs submitted through its REST API)."""

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration
        self.dispatcher = LocalDispatcher()
        self.token = secrets.token_hex(16)
        self._rest: WebServer | None = None
        self._prometheus: WebServer | None = None
        self._stopped = threading.Event()
        self.archivist: JobArchivist | None = None

    def start(self) -> EmbeddedWeb:
        config = self._configuration
        host = config.get("rest.bind-address")
        try:
            if config.contains_key("rest.port"):
                port = config.get("rest.port")
                app = create_app(
                    self.dispatcher,
                    self.token,
                    config.get("metrics.fetcher.update-interval"),
                    host,
                    config.get("rest.allowed-hosts"),
                )
                self._rest = WebServer(app, host, (port, port), "REST API and dashboard").start()
            if config.contains_key("metrics.reporter.prom.port"):
                ports = config.get("metrics.reporter.prom.port")
                self._prometheus = WebServer(create_prometheus_app(self.dispatcher), host, ports, "Prometheus").start()
        except BaseException:
            self.stop()
            raise
        if config.get(ARCHIVE_KEY):
            self.archivist = JobArchivist(self.dispatcher, config.get(ARCHIVE_KEY)).attach()
            atexit.register(self.archivist.wait, ARCHIVE_WAIT_SECONDS)
        if config.get("local.rest.keep-serving"):
            with _KEPT_LOCK:
                _KEPT.append(self)  # serves on after its jobs end, until stop_kept_servers() or the program's exit
        else:
            self.dispatcher.when_all_jobs_ended(self._stop_in_background)
        return self

    @property
    def endpoint(self) -> WebEndpoint:
        return WebEndpoint(
            self._rest.address if self._rest else None,
            self.token,
            self._prometheus.address if self._prometheus else None,
            self.stop,
        )

    def _stop_in_background(self) -> None:
        """The last job ended (on its JobMaster's thread, which must not wait for a server to wind down)."""
        threading.Thread(target=self.stop, name="fluvial-web-stop", daemon=True).start()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        for server in (self._rest, self._prometheus):
            if server is not None:
                server.stop()


_KEPT: list[EmbeddedWeb] = []
_KEPT_LOCK = threading.Lock()


def kept_servers() -> list[WebEndpoint]:
    """The endpoints of the servers that serve on after their jobs ended (`local.rest.keep-serving`)."""
    with _KEPT_LOCK:
        return [web.endpoint for web in _KEPT if not web._stopped.is_set()]


def stop_kept_servers() -> None:
    with _KEPT_LOCK:
        kept = list(_KEPT)
        _KEPT.clear()
    for web in kept:
        web.stop()


class WebLocalExecutor:
    """`execution.target: local` for a job that asks for `rest.port` or `metrics.reporter.prom.port`: the
    LocalExecutor's MiniCluster, served by an EmbeddedWeb while the job runs."""

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration

    def execute(self, pipeline: Any) -> Any:
        web = EmbeddedWeb(self._configuration).start()
        try:
            client = LocalExecutor(self._configuration).execute(pipeline)
        except BaseException:
            web.stop()
            raise
        client.web = web.endpoint
        if web.archivist is not None:
            web.archivist.expect(str(client.get_job_id()))
        web.dispatcher.add(client.cluster)
        endpoint = web.endpoint
        if endpoint.address:
            logger.info("job %s: REST API and dashboard at %s", client.get_job_id(), endpoint.address)
        if endpoint.prometheus_address:
            logger.info("job %s: Prometheus metrics at %s/metrics", client.get_job_id(), endpoint.prometheus_address)
        return client
