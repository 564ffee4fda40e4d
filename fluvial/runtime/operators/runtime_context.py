"""The RuntimeContext a user function gets in `open()`: who its subtask is, where its keyed state lives, and the
metric group it reports into."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fluvial.common.errors import StateError
from fluvial.common.key_groups import key_group_range_for_operator
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.functions import RuntimeContext


class CollectTarget(Protocol):
    """Where a collect sink hands its buffers (the client of `execute_and_collect`, in this process or through a
    TaskManager's control connection). Bounded: the sink asks `writable()` before it sends, so it never blocks
    the thread its task shares with other tasks — of other jobs too, on a session cluster's TaskManager."""

    def writable(self) -> bool:
        """Room for one more buffer now: `send` will not wait."""
        ...

    def send(self, values: Sequence[Any]) -> None: ...


@dataclass(slots=True)
class OperatorContext:
    """What the task hands each operator it builds."""

    task_info: TaskInfo
    operator_name: str
    max_parallelism: int
    job_parameters: dict[str, str] = field(default_factory=dict)
    collect_target: Callable[[str], CollectTarget] | None = None
    processing_time_service: Any = None
    auto_watermark_interval: int = 200
    operator_id: str = ""
    state_backend: Any = None  # the job's StateBackend description; None: the heap
    metrics: Any = None  # its OperatorMetrics (`fluvial.runtime.task_metrics`); None: counted, reported nowhere
    final_checkpoint: bool = False  # the task waits for a final checkpoint after its input ends (FLIP-147)

    def __post_init__(self) -> None:
        if self.metrics is None:
            from fluvial.runtime.task_metrics import detached_operator_metrics

            self.metrics = detached_operator_metrics(self.operator_name, self.operator_id)

    def key_group_range(self) -> range:
        info = self.task_info
        return key_group_range_for_operator(self.max_parallelism, info.parallelism, info.subtask_index)

    def create_keyed_backend(self) -> Any:
        """The keyed state backend the job chose, for this operator's key groups (wrapped in the changelog state
        backend when the job enabled it)."""
        from fluvial.datastream.state_backend import ChangelogStateBackend

        if isinstance(self.state_backend, ChangelogStateBackend):
            from fluvial.checkpoint.changelog_storage import create_changelog_storage
            from fluvial.state.changelog import ChangelogKeyedStateBackend

            settings = self.state_backend.get_settings()
            inner = self._create_backend(self.state_backend.get_delegated_state_backend())
            storage = create_changelog_storage(settings, self.task_info.job_id)
            return ChangelogKeyedStateBackend(inner, settings, self.task_info, self.operator_id, storage)
        return self._create_backend(self.state_backend)

    def _create_backend(self, description: Any) -> Any:
        from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend

        if isinstance(description, EmbeddedRocksDBStateBackend):
            from fluvial.state.factory import create_rocksdb_backend

            return create_rocksdb_backend(
                description, self.max_parallelism, self.key_group_range(), self.task_info, self.operator_id
            )
        from fluvial.state.heap import HeapKeyedStateBackend

        return HeapKeyedStateBackend(self.max_parallelism, self.key_group_range())


class StreamingRuntimeContext(RuntimeContext):
    def __init__(self, context: OperatorContext, keyed_backend: Any = None) -> None:
        self._context = context
        self._info = context.task_info
        self._backend = keyed_backend

    def get_task_name(self) -> str:
        return self._info.task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._info.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._context.max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._info.subtask_index

    def get_attempt_number(self) -> int:
        return self._info.attempt_number

    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        return self._context.job_parameters.get(key, default_value)

    def get_metrics_group(self) -> Any:
        """The operator's MetricGroup: what the function registers there is reported with the operator's
        metrics (REST API, dashboard, Prometheus)."""
        return self._context.metrics.group

    def _keyed(self, state_descriptor: Any) -> Any:
        if self._backend is None:
            raise StateError(
                f"keyed state '{getattr(state_descriptor, 'name', state_descriptor)}' requested in "
                f"'{self._context.operator_name}', which is not keyed: apply the function after key_by(...)"
            )
        return self._backend.get_state(state_descriptor)

    get_state = _keyed
    get_list_state = _keyed
    get_map_state = _keyed
    get_reducing_state = _keyed
    get_aggregating_state = _keyed
