"""MiniCluster: the embedded cluster — a JobMaster and TaskManagers in this process (thread mode).

By default it starts `local.number-taskmanager` TaskManagers with just enough slots between them for the job
(`taskmanager.numberOfTaskSlots` overrides), so a job never waits for slots on one machine. It shuts itself
down when its job ends.
"""

from __future__ import annotations

import math
import queue
import threading
from typing import Any, Callable

from fluvial.cluster.job_client import JobClient
from fluvial.cluster.job_master import JobMaster
from fluvial.cluster.messages import AcknowledgeCheckpoint, TaskExecutionState
from fluvial.cluster.slots import offered_slots
from fluvial.cluster.task_manager import TaskManager
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError
from fluvial.graph.job_graph import JobGraph
from fluvial.runtime.channels import ChannelRegistry


class CollectBuffer:
    """The client end of a collect sink: a bounded queue of buffers. A slow client slows the job; a closed
    client makes the sink drop records instead of blocking forever."""

    CAPACITY = 64
    END = object()

    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue(self.CAPACITY)
        self.closed = threading.Event()

    def send(self, values: list) -> None:
        while not self.closed.is_set():
            try:
                self.queue.put(values, timeout=0.05)
                return
            except queue.Full:
                continue

    def finish(self) -> None:
        while not self.closed.is_set():
            try:
                self.queue.put(self.END, timeout=0.05)
                return
            except queue.Full:
                continue


class MiniCluster:
    def __init__(self, configuration: Configuration | None = None) -> None:
        self.configuration = configuration or Configuration()
        self.channels = ChannelRegistry()
        self.collect_buffers: dict[str, CollectBuffer] = {}
        self.task_managers: list[TaskManager] = []
        self._job_master: JobMaster | None = None
        mode = self.configuration.get("local.taskmanager.mode")
        if mode != "thread":
            raise ConfigurationError(
                f"local.taskmanager.mode '{mode}' is not available in this version; use 'thread'"
            )

    def collect_target(self, collect_id: str) -> Callable[[list], None]:
        return self.collect_buffers.setdefault(collect_id, CollectBuffer()).send

    def submit(self, job_graph: JobGraph) -> JobClient:
        config = self.configuration
        task_manager_count = config.get("local.number-taskmanager")
        slots_each = config.get("taskmanager.numberOfTaskSlots") or math.ceil(
            job_graph.required_slots() / task_manager_count
        )
        free = offered_slots(task_manager_count, slots_each)
        self.task_managers = [
            TaskManager(i, slots_each, self.channels, self._report, self.collect_target, self._report_checkpoint)
            for i in range(task_manager_count)
        ]
        try:
            self._job_master = JobMaster(job_graph, self.task_managers, free, self.channels.release)
        except BaseException:
            self.shutdown()
            raise
        self._job_master.result.add_done_callback(lambda _: self._on_job_end())
        self._job_master.start()
        return JobClient(self._job_master)

    def _report(self, update: TaskExecutionState) -> None:
        master = self._job_master
        if master is None:
            return
        try:
            master.on_task_state(update)
        except BaseException as error:  # noqa: BLE001 - a JobMaster bug must fail the job, never hang execute()
            master.fail_internally(error)

    def _report_checkpoint(self, message: Any) -> None:
        master = self._job_master
        if master is None:
            return
        if isinstance(message, AcknowledgeCheckpoint):
            master.acknowledge_checkpoint(message)
        else:
            master.decline_checkpoint(message)

    def _on_job_end(self) -> None:
        for buffer in self.collect_buffers.values():
            threading.Thread(target=buffer.finish, daemon=True).start()
        self.shutdown()

    def shutdown(self) -> None:
        for task_manager in self.task_managers:
            task_manager.shutdown()
