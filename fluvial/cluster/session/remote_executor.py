"""RemoteExecutor (Flink's): `execution.target: remote` — compile the Pipeline here and submit the JobGraph to
the session cluster at `rest.address:rest.port` (what `fluvial run -m HOST:PORT` sets).

Submission, numbered:
1. Refuse the keys that configure an embedded cluster: a session cluster's TaskManagers, slots, heartbeats
   and REST server are the cluster's, set when it started; a job that sets them would silently not get them.
2. Compile (StreamGraph → JobGraph); check that every user function can travel (cloudpickle).
3. Pickle it with the job's own modules by value and its classes captured (`fluvial.cluster.code_shipping`).
4. POST /jobs with the cluster's token; print Flink's line `Job has been submitted with JobID <id>` (unless
   `announce_submissions` is off: the SQL client says it its own way, as Flink's does).
5. Return a RemoteJobClient: attached (`execution.attached`, the default) it watches the job at once;
   detached (`fluvial run -d`), `execute()` returns as soon as the job is submitted.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from fluvial.cluster.code_shipping import job_modules, pickled_by_value, prepare_for_shipping
from fluvial.cluster.compile import job_graph as job_graph_of
from fluvial.cluster.session.remote_job_client import RemoteJobClient
from fluvial.cluster.session.rest_client import ClusterAddress, RestClusterClient
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError

logger = logging.getLogger(__name__)

announce_submissions: contextvars.ContextVar[bool] = contextvars.ContextVar("announce_submissions", default=True)
"""Whether a submission prints `Job has been submitted with JobID <id>` (`flink run`'s line) on stdout."""

# The keys of an embedded cluster, and where a session cluster takes them from instead.
_CLUSTER_KEYS = {
    "local.number-taskmanager": "fluvial cluster start --taskmanagers N",
    "local.taskmanager.mode": "the session cluster: its TaskManagers are processes",
    "taskmanager.numberOfTaskSlots": "fluvial cluster start --slots S",
    "taskmanager.bind-host": "fluvial cluster start -D taskmanager.bind-host=HOST",
    "heartbeat.interval": "fluvial cluster start -D heartbeat.interval=...",
    "heartbeat.timeout": "fluvial cluster start -D heartbeat.timeout=...",
    "rest.bind-address": "fluvial cluster start --bind HOST",
    "metrics.reporter.prom.port": "the session cluster's REST API (GET /metrics)",
    "metrics.reporter.prom.factory.class": "the session cluster's REST API (GET /metrics)",
}


def check_remote_configuration(configuration: Configuration) -> None:
    """Step 1: a key of an embedded cluster in a job for a session cluster is a ConfigurationError."""
    for key in configuration.keys():
        if key in _CLUSTER_KEYS:
            raise ConfigurationError(
                f"'{key}' configures an embedded cluster, and this job goes to a session cluster "
                f"(execution.target: remote), which takes it from {_CLUSTER_KEYS[key]}: remove it from the job, or "
                "run the job embedded (without -m)"
            )


class RemoteExecutor:
    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration

    def execute(self, pipeline: Any) -> RemoteJobClient:
        configuration = self._configuration
        check_remote_configuration(configuration)
        job_graph = job_graph_of(pipeline)
        payload = ship(job_graph, configuration)
        address = ClusterAddress(configuration.get("rest.address"), configuration.get("rest.port"))
        rest = RestClusterClient(address)
        job_id = rest.submit(payload)
        if announce_submissions.get():
            print(f"Job has been submitted with JobID {job_id}", flush=True)
        logger.info("job %s (%s) submitted to the session cluster at %s", job_graph.job_name, job_id, address)
        return RemoteJobClient(rest, job_id, attached=configuration.get("execution.attached"))


def ship(job_graph: Any, configuration: Configuration) -> bytes:
    """Steps 2 and 3: the JobGraph, cloudpickled for a cluster that cannot import the job's own modules."""
    from fluvial.common.wire import dumps_code
    from fluvial.datastream.python_dependencies import FILE_DELIMITER, FILES

    files = [path for path in (configuration.get_string(FILES) or "").split(FILE_DELIMITER) if path]
    modules = job_modules(files)
    if modules:
        logger.info("shipping the job's own modules by value: %s", ", ".join(m.__name__ for m in modules))
    with pickled_by_value(modules):
        prepare_for_shipping(job_graph, modules)
        return dumps_code(job_graph)
