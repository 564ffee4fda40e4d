"""RayCluster: the MiniCluster of one job whose TaskManagers are Ray actors. The JobMaster, the collect buffers
and the routing of what TaskManagers send stay in this process (the client), as in process mode; what changes is
who runs the TaskManagers (`task_managers.py`) and what is checked before they start.

Submission, numbered:
1. Every user function must pickle (it travels in a deployment); checkpoint and savepoint storage must be
   one every Ray node sees (`placement.check_storage_is_shared`).
2. The job's slots are reserved as a placement group — every bundle or none, within `ray.placement-timeout`.
3. The TaskManager actors start in their bundles and register; then the JobMaster deploys.
The cluster ends with its job: the actors are killed and the placement group removed.
"""

from __future__ import annotations

from typing import Any

from fluvial.cluster.mini_cluster import MiniCluster
from fluvial.cluster.ray.connection import RayConnection
from fluvial.cluster.ray.placement import TaskManagerLayout, alive_nodes, check_storage_is_shared, reserve_slots
from fluvial.cluster.ray.settings import RaySettings
from fluvial.graph.job_graph import JobGraph


class RayCluster(MiniCluster):
    def __init__(
        self, configuration: Any, settings: RaySettings, connection: RayConnection, runtime_env: dict[str, Any]
    ) -> None:
        """`runtime_env`: the TaskManager actors' Ray runtime environment (`runtime_environment.runtime_environment`,
        made where the job was submitted: that is where its files are)."""
        super().__init__(configuration)
        self.mode = "ray"
        self._settings = settings
        self._connection = connection
        self._runtime_env = runtime_env

    def _start_task_managers(self, job_graph: JobGraph) -> tuple[int, int]:
        from fluvial.cluster.code_shipping import prepare_for_shipping
        from fluvial.cluster.ray.task_managers import RayTaskManagers

        settings, config = self._settings, self.configuration
        prepare_for_shipping(job_graph)  # 1
        check_storage_is_shared(job_graph, alive_nodes(), settings.shared_filesystem)
        layout = TaskManagerLayout.for_job(job_graph.required_slots(), config.get("taskmanager.numberOfTaskSlots"))
        group = reserve_slots(
            layout,
            settings.placement_strategy,
            settings.placement_timeout_s,  # 2
            f"fluvial-{job_graph.job_id}",
        )
        try:
            self.processes = RayTaskManagers(
                layout,
                group,
                self,
                node_ip=self._connection.node_ip,
                runtime_env=self._runtime_env,
                heartbeat_interval_ms=config.get("heartbeat.interval"),
                heartbeat_timeout_ms=config.get("heartbeat.timeout"),
            )
        except BaseException:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(group)
            raise
        self.task_managers = self.processes.gateways
        self.processes.start()  # 3
        return layout.count, layout.slots_each
