"""RayExecutor: `execution.target: ray` — compile the Pipeline and run it with TaskManagers as Ray actors and the
JobMaster in this process (`cluster.py`) or, detached, in an actor of its own (`detached.py`), on the Ray cluster
`connection.py` finds or starts."""

from __future__ import annotations

from typing import Any

from fluvial.cluster.compile import job_graph as job_graph_of
from fluvial.cluster.ray.cluster import RayCluster
from fluvial.cluster.ray.connection import connect
from fluvial.cluster.ray.runtime_environment import runtime_environment
from fluvial.cluster.ray.settings import RaySettings


class RayExecutor:
    def __init__(self, configuration: Any) -> None:
        self._configuration = configuration

    def execute(self, pipeline: Any) -> Any:
        """The job's JobClient: a MiniClusterJobClient (the JobMaster in this process), or with
        `execution.attached: false` a DetachedJobClient (the JobMaster a detached actor)."""
        settings = RaySettings.from_configuration(self._configuration)  # a bad key fails before Ray is touched
        job_graph = job_graph_of(pipeline)
        connection = connect(settings.address, detached=not settings.attached)
        runtime_env = runtime_environment(settings.working_dir, connection.worker_environment)
        if not settings.attached:
            from fluvial.cluster.ray.detached import submit_detached

            return submit_detached(job_graph, self._configuration, runtime_env)
        return RayCluster(self._configuration, settings, connection, runtime_env).submit(job_graph)
