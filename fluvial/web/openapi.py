"""The REST API described as an OpenAPI 3 document, built from the server's own routes and their handlers'
docstrings (served at `GET /openapi.json`; the docs site's REST reference is generated from the same routes),
so the description cannot drift from what the server answers."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

import fluvial

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def route_table(routes: Iterable[Any]) -> list[tuple[str, str, str]]:
    """(method, path, description) of every Starlette Route in `routes`, in order (mounts, such as the
    dashboard's static files, are left out)."""
    from starlette.routing import Route

    table = []
    for route in routes:
        if isinstance(route, Route) and route.methods is not None:  # (a Route of a function always has them)
            for method in sorted(route.methods - {"HEAD"}):
                table.append((method, route.path, inspect.getdoc(route.endpoint) or ""))
    return table


def openapi_document(routes: Iterable[Any]) -> dict[str, Any]:
    """An OpenAPI 3.0 document of `routes`: their path parameters, a summary and description from each
    handler's docstring, and the bearer token on every route that changes something."""
    paths: dict[str, dict[str, Any]] = {}
    for method, path, doc in route_table(routes):
        summary, _, rest = doc.partition("\n")
        operation: dict[str, Any] = {
            "summary": summary.strip(),
            "description": " ".join(doc.split()),
            "parameters": [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in re.findall(r"{(\w+)}", path)
            ],
            "responses": {"default": {"description": 'Flink\'s JSON answer, or {"errors": [...]} on failure'}},
        }
        if method not in READ_METHODS:
            operation["security"] = [{"token": []}]
        paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "fluvial REST API",
            "version": fluvial.__version__,
            "description": "Flink's REST routes and JSON field names, served by fluvial.",
        },
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }
