"""LocalExecutor (Flink's): `execution.target: local` — compile the Pipeline and run it on an embedded
MiniCluster that lives as long as the job."""

from __future__ import annotations

from typing import Any

from fluvial.cluster.compile import job_graph as job_graph_of
from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.mini_cluster import MiniCluster
from fluvial.common.errors import ConfigurationError


class LocalExecutor:
    def __init__(self, configuration: Any) -> None:
        self._configuration = configuration

    def execute(self, pipeline: Any) -> MiniClusterJobClient:
        from fluvial.cluster.ray.settings import refuse_ray_keys

        refuse_ray_keys(self._configuration, "local")
        if not self._configuration.get("execution.attached"):
            raise ConfigurationError(
                "execution.attached false asks for a job that runs on after this process ends, but on "
                "execution.target local the job's cluster is this process: set execution.target: ray, or remove "
                "execution.attached"
            )
        job_graph = job_graph_of(pipeline)
        return MiniCluster(self._configuration).submit(job_graph)
