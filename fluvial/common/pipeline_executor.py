"""PipelineExecutor (Flink's): what runs a job's Pipeline on a deployment target, chosen by `execution.target`.

`execute()` never imports a cluster: it asks `executor_for(target)`, which loads the executor module the target
names when it is first asked for (Flink finds its executors through a service loader; the table below is ours).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from fluvial.common.errors import ConfigurationError


class PipelineExecutor(Protocol):
    def execute(self, pipeline: Any) -> Any:
        """Compile and submit `pipeline`; return its JobClient at once (the job runs on)."""
        ...


_EXECUTORS = {
    "local": "fluvial.cluster.local_executor:LocalExecutor",
    "embedded": "fluvial.cluster.local_executor:LocalExecutor",
    "remote": "fluvial.cluster.session.remote_executor:RemoteExecutor",  # a session cluster (`fluvial run -m`)
    "ray": "fluvial.cluster.ray.executor:RayExecutor",
}

# An embedded job that asks for its REST API and dashboard, for a Prometheus endpoint, or to be archived for the
# history server, runs on the same MiniCluster, served by the web layer while it runs (`fluvial.web.embedded`).
_WEB_KEYS = ("rest.port", "metrics.reporter.prom.port", "jobmanager.archive.fs.dir")
_LOCAL_WITH_WEB = "fluvial.web.embedded:WebLocalExecutor"


def executor_for(target: str, configuration: Any) -> PipelineExecutor:
    """The executor of `target` (`execution.target`), built with the job's configuration."""
    location = _EXECUTORS.get(target)
    if location is None:
        raise ConfigurationError(
            f"execution.target '{target}' is not available in this version; use one of: {', '.join(_EXECUTORS)}"
        )
    if (
        location.endswith(":LocalExecutor")
        and configuration is not None
        and any(configuration.contains_key(key) for key in _WEB_KEYS)
    ):
        location = _LOCAL_WITH_WEB
    module_name, _, class_name = location.partition(":")
    return getattr(importlib.import_module(module_name), class_name)(configuration)
