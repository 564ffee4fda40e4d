"""MiniCluster: the embedded cluster — a JobMaster and TaskManagers in this process (thread mode).

By default it starts `local.number-taskmanager` TaskManagers with just enough slots between them for the job
(`taskmanager.numberOfTaskSlots` overrides), so a job never waits for slots on one machine. The JobMaster
reaches each TaskManager through its TaskManagerGateway (here: the TaskManager itself) and each TaskManager
reaches the JobMaster through the JobMasterGateway registered for the job. The cluster shuts itself down when
its job ends.
"""

from __future__ import annotations

import logging
import math
import threading

from fluvial.cluster.collect import CollectBuffer
from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.job_master import JobMaster
from fluvial.cluster.slots import offered_slots
from fluvial.cluster.task_manager import TaskManager
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError
from fluvial.graph.job_graph import JobGraph
from fluvial.runtime.channels import ChannelRegistry

logger = logging.getLogger(__name__)


class MiniCluster:
    def __init__(self, configuration: Configuration | None = None) -> None:
        self.configuration = configuration or Configuration()
        self.channels = ChannelRegistry()
        self.collect_buffers: dict[str, CollectBuffer] = {}
        self._collect_lock = threading.Lock()
        self.task_managers: list[TaskManager] = []
        self.job_master: JobMaster | None = None
        mode = self.configuration.get("local.taskmanager.mode")
        if mode != "thread":
            raise ConfigurationError(
                f"local.taskmanager.mode '{mode}' is not available in this version; use 'thread'"
            )

    def collect_buffer(self, collect_id: str) -> CollectBuffer:
        with self._collect_lock:
            return self.collect_buffers.setdefault(collect_id, CollectBuffer())

    def collect_target(self, collect_id: str):  # noqa: ANN201 - Callable[[list], None]
        return self.collect_buffer(collect_id).send

    def submit(self, job_graph: JobGraph) -> MiniClusterJobClient:
        config = self.configuration
        task_manager_count = config.get("local.number-taskmanager")
        slots_each = config.get("taskmanager.numberOfTaskSlots") or math.ceil(
            job_graph.required_slots() / task_manager_count
        )
        self.task_managers = [TaskManager(i, slots_each, self.channels, self.collect_target)
                              for i in range(task_manager_count)]
        try:
            job_master = JobMaster(job_graph, self.task_managers, offered_slots(task_manager_count, slots_each))
        except BaseException:
            self.shutdown()
            raise
        self.job_master = job_master
        for task_manager in self.task_managers:
            task_manager.register_job_master(job_graph.job_id, job_master)
        job_master.result.add_done_callback(lambda _: self._on_job_end())
        job_master.start()
        return MiniClusterJobClient(job_master, self)

    def _on_job_end(self) -> None:
        for buffer in list(self.collect_buffers.values()):
            threading.Thread(target=buffer.finish, daemon=True).start()
        self.shutdown()

    def shutdown(self) -> None:
        for task_manager in self.task_managers:
            task_manager.shutdown()
