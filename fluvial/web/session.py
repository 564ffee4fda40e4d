"""The web front of a session cluster: its REST API and dashboard over the SessionDispatcher, served on the
cluster's bind address. The composition root (`fluvial.cli.jobmanager`) hands this to the SessionCluster, which
sits below the web layer and knows it only as a `WebFront` (`fluvial.cluster.session.cluster`)."""

from __future__ import annotations

from fluvial.cluster.session.session_dispatcher import SessionDispatcher
from fluvial.common.configuration import Configuration
from fluvial.web.rest import create_app
from fluvial.web.server import WebServer


def serve_session(
    dispatcher: SessionDispatcher, token: str, configuration: Configuration, bind: str, port: int
) -> WebServer:
    """The REST API and dashboard of `dispatcher`, started on `bind:port` (port 0: any free port)."""
    app = create_app(
        dispatcher,
        token,
        configuration.get("metrics.fetcher.update-interval"),
        bind,
        configuration.get("rest.allowed-hosts"),
        archive_directory=configuration.get("jobmanager.archive.fs.dir"),
    )
    return WebServer(app, bind, (port, port), "REST API and dashboard").start()
