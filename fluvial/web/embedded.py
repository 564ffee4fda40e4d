"""The REST API, dashboard and Prometheus endpoint of an embedded job.

`rest.port` (with `rest.bind-address`) in a job's configuration serves the REST API and the dashboard for the
MiniCluster the job runs on; `metrics.reporter.prom.port` serves its metrics in Prometheus' text format. Both
listen before the job starts and stop when it ends (and with it, any job submitted through that REST API).
The access token of the mutating routes is new for each server; the JobClient carries it (`client.web`).

For the command line, `web_configuration(port, bind_address)` gives the keys `fluvial run --web` sets.
"""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass
from typing import Any

from fluvial.cluster.local_dispatcher import LocalDispatcher
from fluvial.cluster.local_executor import LocalExecutor
from fluvial.common.configuration import Configuration
from fluvial.web.rest import create_app, create_prometheus_app
from fluvial.web.server import WebServer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WebEndpoint:
    """Where an embedded job's REST API and dashboard answer, the token its mutating routes need, and where its
    Prometheus endpoint answers (None when not asked for)."""

    address: str | None
    token: str
    prometheus_address: str | None


def web_configuration(port: int = 8081, bind_address: str = "127.0.0.1",
                      prometheus_port: int | None = None) -> Configuration:
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

    def start(self) -> EmbeddedWeb:
        config = self._configuration
        host = config.get("rest.bind-address")
        try:
            if config.contains_key("rest.port"):
                port = config.get("rest.port")
                app = create_app(self.dispatcher, self.token, config.get("metrics.fetcher.update-interval"))
                self._rest = WebServer(app, host, (port, port), "REST API and dashboard").start()
            if config.contains_key("metrics.reporter.prom.port"):
                ports = config.get("metrics.reporter.prom.port")
                self._prometheus = WebServer(create_prometheus_app(self.dispatcher), host, ports, "Prometheus").start()
        except BaseException:
            self.stop()
            raise
        self.dispatcher.when_all_jobs_ended(self._stop_in_background)
        return self

    @property
    def endpoint(self) -> WebEndpoint:
        return WebEndpoint(self._rest.address if self._rest else None, self.token,
                           self._prometheus.address if self._prometheus else None)

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
        web.dispatcher.add(client.cluster)
        endpoint = web.endpoint
        if endpoint.address:
            logger.info("job %s: REST API and dashboard at %s", client.get_job_id(), endpoint.address)
        if endpoint.prometheus_address:
            logger.info("job %s: Prometheus metrics at %s/metrics", client.get_job_id(), endpoint.prometheus_address)
        return client
