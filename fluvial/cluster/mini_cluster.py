"""MiniCluster: the embedded cluster — a JobMaster in this process and TaskManagers as threads of it or as
processes of this machine (`local.taskmanager.mode`: thread | process | auto; auto, the default, takes
processes when the job's highest parallelism is above 1, so parallelism 2 gets two cores).

Thread mode starts `local.number-taskmanager` TaskManagers (default 1). Process mode starts as many TaskManager
processes as there are cores — never more than the job needs slots — unless `local.number-taskmanager` says
otherwise. Either way the job's slots are spread over them (`taskmanager.numberOfTaskSlots` overrides), so a job
never waits for slots on one machine. The JobMaster reaches each TaskManager through its TaskManagerGateway (the
TaskManager itself, or a proxy over its process's control connection) and the TaskManagers reach it through
the JobMasterGateway. The cluster shuts itself down when its job ends.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable
from typing import Any

from fluvial.cluster.collect import CollectBuffer
from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.job_master import JobMaster
from fluvial.cluster.slots import offered_slots
from fluvial.common import logs
from fluvial.common.configuration import Configuration
from fluvial.datastream.python_dependencies import put_on_path
from fluvial.graph.job_graph import JobGraph

logger = logging.getLogger(__name__)


def task_manager_mode(configuration: Configuration, job_graph: JobGraph) -> str:
    """'thread' or 'process' for this job (auto: processes when its highest parallelism is above 1, or when it
    has python.archives: they are found in a TaskManager process's working directory)."""
    mode: str = configuration.get("local.taskmanager.mode")
    if mode == "auto":
        parallel = max(vertex.parallelism for vertex in job_graph.vertices) > 1
        return "process" if parallel or configuration.get_string("python.archives") else "thread"
    return mode


class MiniCluster:
    def __init__(self, configuration: Configuration | None = None) -> None:
        self.configuration = configuration or Configuration()
        self.collect_buffers: dict[str, CollectBuffer] = {}
        self._collect_lock = threading.Lock()
        self.task_managers: list[Any] = []  # the TaskManagers (thread mode) or their gateways (process mode)
        self.processes: Any = None  # TaskManagerProcesses in process mode
        self.job_master: JobMaster | None = None
        self.mode = "thread"
        self._job_log: Any = None  # the handler writing the job's log file (logs.open_job_log)
        self._python_environment: Any = None  # the job's JobPythonEnvironment, when it has one
        self._release_python_path: Callable[[], None] = _nothing  # its requirements off this process's sys.path

    # -- what TaskManagers reach -------------------------------------------------------------------------------

    def collect_buffer(self, collect_id: str) -> CollectBuffer:
        with self._collect_lock:
            return self.collect_buffers.setdefault(collect_id, CollectBuffer(collect_id))

    def collect_target(self, collect_id: str) -> CollectBuffer:
        return self.collect_buffer(collect_id)

    def job_master_gateway(self, job_id: str) -> JobMaster | None:
        job_master = self.job_master
        return job_master if job_master is not None and job_master.job_id == job_id else None

    def task_manager_lost(self, index: int, error: BaseException) -> None:
        if self.job_master is not None:
            self.job_master.task_manager_lost(index, error)

    # -- running a job ------------------------------------------------------------------------------------------

    def submit(self, job_graph: JobGraph) -> MiniClusterJobClient:
        self._job_log = logs.open_job_log(job_graph.job_id, self.configuration)
        try:
            self._enter_python_environment(job_graph)
            count, slots_each = self._start_task_managers(job_graph)
            job_master = JobMaster(
                job_graph, self.task_managers, offered_slots(count, slots_each), resources=self.processes
            )
        except BaseException:
            self.shutdown()
            raise
        self.job_master = job_master
        if self.processes is None:  # TaskManager processes report through their control connections instead
            for task_manager in self.task_managers:
                task_manager.register_job_master(job_graph.job_id, job_master)
        job_master.result.add_done_callback(lambda _: self._on_job_end())
        job_master.start()
        return MiniClusterJobClient(job_master, self)

    def _enter_python_environment(self, job_graph: JobGraph) -> None:
        """Build the job's python.requirements and python.archives here, where its TaskManagers run; TaskManager
        processes enter it when the job deploys (`process/job_environment.py`), threads share this process's
        sys.path."""
        from fluvial.cluster import python_environment

        environment = python_environment.build(
            self.configuration, job_graph.job_id, python_environment.install_dir_of(self.configuration)
        )
        job_graph.python_environment = self._python_environment = environment

    def _start_task_managers(self, job_graph: JobGraph) -> tuple[int, int]:
        """Start the job's TaskManagers (self.task_managers: their gateways); (TaskManagers, slots each)."""
        self.mode = task_manager_mode(self.configuration, job_graph)
        count, slots_each = self._layout(job_graph)
        if self.mode == "process":
            from fluvial.cluster.code_shipping import prepare_for_shipping

            prepare_for_shipping(job_graph)
            self._start_processes(count, slots_each, str(logs.job_stdout_file(job_graph.job_id, self.configuration)))
        else:
            if self._python_environment is not None:
                self._release_python_path = put_on_path(list(self._python_environment.path))
            self._start_threads(count, slots_each)
        return count, slots_each

    def _layout(self, job_graph: JobGraph) -> tuple[int, int]:
        """(TaskManagers, slots each) for the job."""
        config = self.configuration
        required = job_graph.required_slots()
        if "local.number-taskmanager" in config.keys():
            count = config.get("local.number-taskmanager")
        elif self.mode == "process":
            count = max(1, min(os.cpu_count() or 1, required))
        else:
            count = config.get("local.number-taskmanager")
        return count, config.get("taskmanager.numberOfTaskSlots") or math.ceil(required / count)

    def _start_threads(self, count: int, slots_each: int) -> None:
        from fluvial.cluster.task_manager import TaskManager
        from fluvial.runtime.channels import ChannelRegistry

        channels = ChannelRegistry()
        self.task_managers = [TaskManager(i, slots_each, channels, self.collect_target) for i in range(count)]

    def _start_processes(self, count: int, slots_each: int, stdout_file: str) -> None:
        from fluvial.cluster.process.pool import TaskManagerProcesses

        config = self.configuration
        self.processes = TaskManagerProcesses(
            count,
            slots_each,
            self,
            bind_host=config.get("taskmanager.bind-host"),
            heartbeat_interval_ms=config.get("heartbeat.interval"),
            heartbeat_timeout_ms=config.get("heartbeat.timeout"),
            stdout_file=stdout_file,
        )
        self.task_managers = self.processes.gateways
        self.processes.start()

    def _on_job_end(self) -> None:
        for buffer in list(self.collect_buffers.values()):
            buffer.finish()
        self.shutdown()

    def shutdown(self) -> None:
        self._release_python_path()
        self._release_python_path = _nothing
        if self._job_log is not None:
            logs.close_job_log(self._job_log)
            self._job_log = None
        if self.processes is not None:
            self.processes.shutdown()
        else:
            for task_manager in self.task_managers:
                task_manager.shutdown()
        from fluvial.cluster import python_environment

        python_environment.discard(self._python_environment)
        self._python_environment = None


def _nothing() -> None:
    pass
