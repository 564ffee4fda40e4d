"""The deployment descriptors: what the JobMaster hands a TaskManager to run one subtask attempt (Flink's
TaskDeploymentDescriptor and its parts), and what a task reports back when it fails.

They are plain data, shared by the side that builds them (`cluster/`) and the side that runs them
(`runtime/task.py`), so the messages between the two (`cluster/messages.py`) import this module and never the
Task itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from fluvial.datastream.transformations import KeyedReduceSpec, PartitionerSpec, WindowSpec
from fluvial.graph.job_graph import JobVertex
from fluvial.runtime.channels import ChannelId


@dataclass(frozen=True, slots=True)
class JobPythonEnvironment:
    """A job's own Python environment on the machine of its TaskManagers (PyFlink's `python.requirements` and
    `python.archives`), built by the cluster before the job's code is loaded (`cluster/python_environment.py`).

    `path`: directories put on `sys.path` while the job runs there (its installed requirements).
    `working_directory`: the directory its archives were extracted into, one entry per name in `archives`; a
    TaskManager process makes each reachable from its own working directory under that name, as PyFlink's
    Python workers find them in theirs."""

    path: tuple[str, ...] = ()
    working_directory: str | None = None
    archives: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExecutionAttemptId:
    """One attempt of one subtask of one job (Flink's ExecutionAttemptID): the key every message about a running
    subtask carries and every lookup of an attempt uses. A restart deploys attempt + 1, so a late message from an
    earlier attempt never matches the current one.

    It lives beside the deployment descriptors rather than in `cluster/execution_graph.py` because both sides of
    the seam need it: the JobMaster's scheduler and the tasks that report with it."""

    job_id: str
    vertex_id: int
    subtask_index: int
    attempt: int

    @property
    def execution_vertex_id(self) -> tuple[int, int]:
        """(vertex id, subtask index): the subtask across its attempts (the checkpoint coordinator's task id)."""
        return (self.vertex_id, self.subtask_index)

    def __str__(self) -> str:
        return f"{self.job_id}/{self.vertex_id}/{self.subtask_index}#{self.attempt}"


@dataclass(frozen=True)
class TaskCheckpointSettings:
    """What a task needs to know about checkpointing (part of its TaskSpec)."""

    exactly_once: bool
    storage: Any  # the storage description; the TaskManager builds the access object from it
    final_checkpoint: bool = True  # checkpoints-after-tasks-finish: a task that ended waits for a final checkpoint
    unaligned_timeout_ms: int | None = None  # unaligned checkpoints on: their aligned-checkpoint timeout; None: off


@dataclass(frozen=True)
class OutputSpec:
    """What a task needs to write one JobEdge: the channels in consumer order and how to partition."""

    dataset_id: str
    partitioner: PartitionerSpec
    channel_ids: tuple[ChannelId, ...]
    consumer_max_parallelism: int
    consumer_parallelism: int
    # the consumer checks a typed key_by's keys itself (`checks_the_keys_it_meets`): with one channel, the writer
    # has no key to compute and checks none
    consumer_checks_keys: bool = False


def checks_the_keys_it_meets(vertex: JobVertex) -> bool:
    """Whether the head of `vertex` checks a typed key_by's keys itself, each the first time it meets it
    (`StreamOperator.new_key_check`): a keyed reduce, whose state lookup misses exactly then, or a window operator
    (where a key has no window contents yet; its general path checks each distinct key once). A producer writing to
    it over one channel then computes no key at all; over several it checks each key where it first hashes it."""
    return isinstance(vertex.head.operator, (KeyedReduceSpec, WindowSpec))


@dataclass(frozen=True)
class InputSpec:
    channel_id: ChannelId
    type_number: int


@dataclass(frozen=True)
class TaskFailure:
    """Why a task failed: the exception (with its traceback) and the operator that raised it."""

    error: BaseException
    operator_name: str
    task_name: str
    traceback_text: str


@dataclass(frozen=True)
class TaskCancellationSettings:
    """Flink's `task.cancellation.interval` (ms between interrupts of a task that does not cancel) and
    `task.cancellation.timeout` (ms until such a task is given up; 0: never)."""

    interval_ms: int = 30_000
    timeout_ms: int = 180_000

    @staticmethod
    def of(configuration: Any) -> TaskCancellationSettings:
        if configuration is None:
            return TaskCancellationSettings()
        return TaskCancellationSettings(
            configuration.get("task.cancellation.interval"), configuration.get("task.cancellation.timeout")
        )


@dataclass(frozen=True)
class BufferDebloatSettings:
    """Flink's `taskmanager.network.memory.buffer-debloat.enabled` with `.target` (how long the data queued on a
    task's input channels should take it to process) and `.period` (how often the buffer size is recomputed)."""

    target_ms: int = 1000
    period_ms: int = 200

    @staticmethod
    def of(configuration: Any) -> BufferDebloatSettings | None:
        if configuration is None or not configuration.get("taskmanager.network.memory.buffer-debloat.enabled"):
            return None
        return BufferDebloatSettings(
            configuration.get("taskmanager.network.memory.buffer-debloat.target"),
            configuration.get("taskmanager.network.memory.buffer-debloat.period"),
        )


@dataclass
class TaskSpec:
    """Everything a TaskManager needs to run one subtask attempt; built by the JobMaster."""

    job_id: str
    vertex: JobVertex
    subtask_index: int
    attempt: int
    inputs: list[InputSpec]
    outputs: list[OutputSpec]
    job_parameters: dict[str, str] = field(default_factory=dict)
    auto_watermark_interval: int = 200
    checkpointing: Any = None  # TaskCheckpointSettings when the job takes checkpoints
    restore: dict[str, Any] | None = None  # operator id -> the RestoreAssignment it restores from
    function_templates: dict[int, Any] | None = None  # node id -> {field -> its pristine object}, for copies
    state_backend: Any = None  # the job's StateBackend description
    receiver_settings: Any = None  # ReceiverSettings, for the source subtasks of jobs with receivers
    channel_peers: dict[Any, int] = field(default_factory=dict)  # channel id -> TaskManager of its other end
    main_classes: bytes | None = None  # classes of the job's script, for a TaskManager in another process
    job_name: str = ""
    metrics_interval_ms: int = 1000  # how often a running task reports its metrics
    cancellation: TaskCancellationSettings = field(default_factory=TaskCancellationSettings)
    buffer_debloat: BufferDebloatSettings | None = None  # None: buffers keep their size
    python_environment: JobPythonEnvironment | None = None  # requirements and archives, when the job has some

    @property
    def execution_key(self) -> tuple[int, int]:
        return (self.vertex.id, self.subtask_index)

    @cached_property
    def attempt_id(self) -> ExecutionAttemptId:
        return ExecutionAttemptId(self.job_id, self.vertex.id, self.subtask_index, self.attempt)
