"""RayExecutor: `execution.target: ray` — compile the Pipeline and run it with TaskManagers as Ray actors and the
JobMaster in this process (`cluster.py`), on the Ray cluster `connection.py` finds or starts."""

from __future__ import annotations

from typing import Any

from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.ray.cluster import RayCluster
from fluvial.cluster.ray.connection import connect
from fluvial.cluster.ray.settings import RaySettings
from fluvial.graph.job_graph import build_job_graph
from fluvial.graph.translate import stream_graph_of


class RayExecutor:
    def __init__(self, configuration: Any) -> None:
        self._configuration = configuration

    def execute(self, pipeline: Any) -> MiniClusterJobClient:
        settings = RaySettings.from_configuration(self._configuration)  # a bad key fails before Ray is touched
        job_graph = build_job_graph(stream_graph_of(pipeline))
        connection = connect(settings.address)
        return RayCluster(self._configuration, settings, connection).submit(job_graph)
