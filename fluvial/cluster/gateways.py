"""The seams between JobMaster and TaskManagers (Flink's JobMasterGateway and TaskExecutorGateway).

Each side holds the other only through these Protocols, which carry the dataclasses of `messages.py` and
nothing else. In one process a gateway is the object itself (direct calls, which post mails and return); with
TaskManager processes it is a proxy over an authenticated connection; on Ray, an actor handle. Neither the
JobMaster nor the Task changes between the three.

Contract for every method: it returns quickly and never blocks on the other side's work (the receiver queues
the message and handles it on its own thread), and it never raises for a message that arrives late or for a
job or task the receiver no longer knows — in a distributed system those are normal.
"""

from __future__ import annotations

from typing import Protocol

from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    CancelTask,
    DeclineCheckpoint,
    DeployTask,
    MetricsSnapshot,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    ReleaseJob,
    TaskEndOfData,
    TaskExecutionState,
    TriggerCheckpoint,
)


class JobMasterGateway(Protocol):
    """What TaskManagers tell the JobMaster of one job."""

    def update_task_execution_state(self, message: TaskExecutionState) -> None: ...

    def acknowledge_checkpoint(self, message: AcknowledgeCheckpoint) -> None: ...

    def decline_checkpoint(self, message: DeclineCheckpoint) -> None: ...

    def report_metrics(self, message: MetricsSnapshot) -> None:
        """A subtask's metrics; the JobMaster keeps the latest of each subtask for the REST API and Prometheus."""
        ...

    def notify_end_of_data(self, message: TaskEndOfData) -> None: ...


class TaskManagerGateway(Protocol):
    """What the JobMaster asks of a TaskManager."""

    def submit_task(self, message: DeployTask) -> None: ...

    def cancel_task(self, message: CancelTask) -> None: ...

    def trigger_checkpoint(self, message: TriggerCheckpoint) -> None: ...

    def notify_checkpoint_complete(self, message: NotifyCheckpointComplete) -> None: ...

    def notify_checkpoint_aborted(self, message: NotifyCheckpointAborted) -> None: ...

    def release_job(self, message: ReleaseJob) -> None: ...
