"""The generated references of the docs site match the code: every configuration key, metric and REST route is
documented, the pages under docs/ are what `python -m docsite` makes of the code now, and the server serves the
same routes as an OpenAPI document. A new key, metric or route without a description fails here."""

from __future__ import annotations

import asyncio
import json

import pytest

from docsite import references
from fluvial.web.rest import create_app


def test_every_configuration_key_has_a_description() -> None:
    undocumented = [key for key, option in references.configuration_options().items() if not option.description.strip()]
    assert not undocumented, f"give these keys a description in fluvial.common.configuration: {undocumented}"


def test_every_metric_has_a_meaning_and_a_scope() -> None:
    for name, scopes in references.metric_scopes().items():
        assert scopes, f"metric {name} is in no scope of fluvial.metrics.names"
        assert references.METRIC_MEANINGS.get(name), f"add metric {name} to docsite.references.METRIC_MEANINGS"


def test_every_rest_route_says_what_it_does() -> None:
    routes = references.rest_routes()
    assert len(routes) >= 25
    undocumented = [f"{method} {path}" for method, path, doc in routes if not doc.strip()]
    assert not undocumented, f"give the handlers of these routes a docstring in fluvial.web.rest: {undocumented}"


@pytest.mark.parametrize("path", list(references.generated_files()), ids=lambda path: path.name)
def test_the_generated_pages_are_current(path) -> None:
    assert path.exists() and path.read_text() == references.generated_files()[path], (
        f"{path} is out of date with the code: run `python -m docsite` and commit the result"
    )


def test_the_grafana_dashboard_has_a_panel_per_metric_and_scope() -> None:
    dashboard = references.grafana_dashboard()
    expressions = " ".join(panel["targets"][0]["expr"] for panel in dashboard["panels"])
    for name, scopes in references.metric_scopes().items():
        for prometheus_name in references.prometheus_names(name, scopes):
            assert prometheus_name + "{" in expressions
    json.dumps(dashboard)


def _get(app, path: str) -> tuple[int, bytes]:
    """One GET through the ASGI app, without a server."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "scheme": "http",
        "server": ("127.0.0.1", 8081),
        "client": ("127.0.0.1", 5000),
        "root_path": "",
        "http_version": "1.1",
    }
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


def test_the_server_serves_its_routes_as_an_openapi_document() -> None:
    status, body = _get(create_app(None, token="secret"), "/openapi.json")  # type: ignore[arg-type] - no job asked
    assert status == 200
    document = json.loads(body)
    assert document["openapi"].startswith("3.")
    served = {(method.upper(), path) for path, operations in document["paths"].items() for method in operations}
    assert served == {(method, path) for method, path, _ in references.rest_routes()}
    assert document["paths"]["/jobs/{job_id}"]["patch"]["security"] == [{"token": []}]
    assert "security" not in document["paths"]["/jobs"]["get"]
    assert [p["name"] for p in document["paths"]["/jobs/{job_id}/vertices/{vertex_id}"]["get"]["parameters"]] == [
        "job_id",
        "vertex_id",
    ]
