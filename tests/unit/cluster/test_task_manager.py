"""Task lifecycle through a real TaskManager (one executor thread): CREATED → INITIALIZING → RUNNING → FINISHED /
CANCELED / FAILED, RUNNING and the end reported once each to the job's JobMasterGateway, with user functions
opened and closed around the run; checkpoint acknowledgements and declines as messages; release_job."""

from __future__ import annotations

import threading
import time

import pytest

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    CancelTask,
    DeclineCheckpoint,
    DeployTask,
    MetricsSnapshot,
    ReleaseJob,
    TaskExecutionState,
    TriggerCheckpoint,
)
from fluvial.cluster.task_manager import TaskCheckpointResponder, TaskManager
from fluvial.datastream import MapFunction, SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import JobManagerCheckpointStorage
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.runtime.channels import ChannelRegistry
from fluvial.runtime.deployment import ExecutionAttemptId, TaskCheckpointSettings
from fluvial.runtime.execution_state import ExecutionState

LOG: list[str] = []
SUNK: list = []


@pytest.fixture(autouse=True)
def _reset():
    LOG.clear()
    SUNK.clear()
    yield


class Tracked(MapFunction):
    def open(self, runtime_context):
        LOG.append("open")

    def map(self, value):
        if value == "boom":
            raise ValueError("bad record")
        return value

    def close(self):
        LOG.append("close")


class Keep(SinkFunction):
    def invoke(self, value, context):
        SUNK.append(value)


class Endless(Source):
    def get_boundedness(self):
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism):
        return [0]

    def create_reader(self, task_info):
        return EndlessReader()


class EndlessReader(SourceReader):
    def add_splits(self, splits):
        LOG.append("reader-open")

    def poll(self, max_records):
        return []

    def snapshot_state(self):
        return []

    def close(self):
        LOG.append("reader-close")


class Reports:
    """A JobMasterGateway that records what the TaskManager reports."""

    def __init__(self) -> None:
        self.items: list[TaskExecutionState] = []
        self.events: list = []  # states and metrics snapshots, in the order they arrived
        self.lock = threading.Condition()

    def report_metrics(self, message) -> None:
        with self.lock:
            self.events.append(message)
            self.lock.notify_all()

    def update_task_execution_state(self, update: TaskExecutionState) -> None:
        with self.lock:
            self.items.append(update)
            self.events.append(update)
            self.lock.notify_all()

    def acknowledge_checkpoint(self, message) -> None:
        raise AssertionError("these jobs take no checkpoints")

    decline_checkpoint = acknowledge_checkpoint

    def states(self, vertex_id: int | None = None) -> list[str]:
        return [u.state.value for u in self.items if vertex_id is None or u.attempt_id.vertex_id == vertex_id]

    def wait_for(self, predicate, timeout: float = 10.0) -> None:
        with self.lock:
            assert self.lock.wait_for(lambda: predicate(self), timeout), [u.state for u in self.items]


def _deploy_all(job_graph, task_manager, reports) -> ExecutionGraph:
    task_manager.register_job_master(job_graph.job_id, reports)
    graph = ExecutionGraph(job_graph)
    for execution in graph.deployment_order():
        task_manager.submit_task(DeployTask(graph.task_spec(execution), execution.subtask_index))
    return graph


def _terminal(reports: Reports, count: int):
    return lambda r: sum(s in ("FINISHED", "FAILED", "CANCELED") for s in r.states()) >= count


@pytest.fixture
def task_manager_and_reports():
    reports = Reports()
    task_manager = TaskManager(0, 4, ChannelRegistry())
    yield task_manager, reports
    task_manager.shutdown()


def _env():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


@pytest.mark.timeout(30)
def test_bounded_chain_runs_to_finished_and_closes_functions(task_manager_and_reports):
    task_manager, reports = task_manager_and_reports
    env = _env()
    env.from_source(NumberSequenceSource(1, 5000)).map(Tracked()).add_sink(Keep())
    _deploy_all(env.get_job_graph(), task_manager, reports)
    reports.wait_for(_terminal(reports, 1))
    assert reports.states() == ["RUNNING", "FINISHED"]
    assert SUNK == list(range(1, 5001))
    assert LOG == ["open", "close"]


@pytest.mark.timeout(30)
def test_two_vertices_exchange_over_channels_and_both_finish(task_manager_and_reports):
    task_manager, reports = task_manager_and_reports
    env = _env()
    env.from_source(NumberSequenceSource(1, 20_000)).rebalance().map(Tracked()).add_sink(Keep())
    job_graph = env.get_job_graph()
    assert len(job_graph.vertices) == 2
    _deploy_all(job_graph, task_manager, reports)
    reports.wait_for(_terminal(reports, 2))
    for vertex in job_graph.vertices:
        assert reports.states(vertex.id) == ["RUNNING", "FINISHED"]
    assert SUNK == list(range(1, 20_001))


@pytest.mark.timeout(30)
def test_each_task_reports_its_final_metrics_just_before_it_ends(task_manager_and_reports):
    task_manager, reports = task_manager_and_reports
    env = _env()
    env.from_source(NumberSequenceSource(1, 20_000)).rebalance().map(Tracked()).add_sink(Keep())
    job_graph = env.get_job_graph()
    _deploy_all(job_graph, task_manager, reports)
    reports.wait_for(_terminal(reports, 2))
    source, sink = job_graph.vertices
    for vertex in (source, sink):
        events = [e for e in reports.events if e.attempt_id.vertex_id == vertex.id]
        assert isinstance(events[-1], TaskExecutionState) and events[-1].state is ExecutionState.FINISHED
        final = events[-2]
        assert isinstance(final, MetricsSnapshot) and final.metrics.final, "the final figures come first"
        assert final.metrics.task_manager_id == task_manager.resource_id
    source_metrics = [
        e for e in reports.events if isinstance(e, MetricsSnapshot) and e.attempt_id.vertex_id == source.id
    ][-1]
    sink_metrics = [e for e in reports.events if isinstance(e, MetricsSnapshot) and e.attempt_id.vertex_id == sink.id][
        -1
    ]
    assert source_metrics.metrics.task["numRecordsOut"] == 20_000 and source_metrics.metrics.task["numRecordsIn"] == 0
    assert sink_metrics.metrics.task["numRecordsIn"] == 20_000 and sink_metrics.metrics.task["numRecordsOut"] == 0
    map_id, sink_id = (node.operator_id for node in sink.nodes)
    assert sink_metrics.metrics.operators[map_id]["numRecordsOut"] == 20_000
    assert sink_metrics.metrics.operators[sink_id]["numRecordsIn"] == 20_000


@pytest.mark.timeout(30)
def test_cancel_turns_a_running_task_canceled_and_closes_everything(task_manager_and_reports):
    task_manager, reports = task_manager_and_reports
    env = _env()
    env.from_source(Endless()).map(Tracked()).add_sink(Keep())
    job_graph = env.get_job_graph()
    _deploy_all(job_graph, task_manager, reports)
    reports.wait_for(lambda r: "RUNNING" in r.states())
    time.sleep(0.05)
    assert reports.states() == ["RUNNING"]  # an idle source keeps running
    vertex = job_graph.vertices[0]
    task_manager.cancel_task(CancelTask(ExecutionAttemptId(job_graph.job_id, vertex.id, 0, 0)))
    reports.wait_for(_terminal(reports, 1))
    assert reports.states() == ["RUNNING", "CANCELED"]
    assert LOG.count("close") == 1 and LOG.count("reader-close") == 1
    task_manager.cancel_task(
        CancelTask(ExecutionAttemptId(job_graph.job_id, vertex.id, 0, 0))
    )  # cancelling again: nothing more
    time.sleep(0.05)
    assert reports.states() == ["RUNNING", "CANCELED"]


@pytest.mark.timeout(30)
def test_failure_reports_operator_error_and_traceback(task_manager_and_reports):
    task_manager, reports = task_manager_and_reports
    env = _env()
    env.from_collection(["a", "boom", "c"]).map(Tracked()).add_sink(Keep())
    _deploy_all(env.get_job_graph(), task_manager, reports)
    reports.wait_for(_terminal(reports, 1))
    assert reports.states() == ["RUNNING", "FAILED"]
    failed = reports.items[-1].failure
    assert failed.operator_name == "Map"
    assert isinstance(failed.error, ValueError) and str(failed.error) == "bad record"
    assert "bad record" in failed.traceback_text and "in map" in failed.traceback_text
    assert failed.task_name.endswith("(1/1)")
    assert LOG == ["open", "close"]
    assert SUNK in (["a"], [])  # nothing after the failing record


def test_terminal_states():
    assert [s.name for s in ExecutionState if s.is_terminal] == ["FINISHED", "CANCELED", "FAILED"]


# -- checkpoints through the TaskManager: the responder's messages, declines for tasks it no longer runs ------------


class CheckpointReports(Reports):
    """A JobMasterGateway that also records acknowledgements and declines."""

    def __init__(self) -> None:
        super().__init__()
        self.acks: list[AcknowledgeCheckpoint] = []
        self.declines: list[DeclineCheckpoint] = []

    def acknowledge_checkpoint(self, message: AcknowledgeCheckpoint) -> None:
        with self.lock:
            self.acks.append(message)
            self.lock.notify_all()

    def decline_checkpoint(self, message: DeclineCheckpoint) -> None:
        with self.lock:
            self.declines.append(message)
            self.lock.notify_all()


def _deploy_checkpointed(job_graph, task_manager, reports) -> ExecutionGraph:
    task_manager.register_job_master(job_graph.job_id, reports)
    graph = ExecutionGraph(job_graph)
    settings = TaskCheckpointSettings(exactly_once=True, storage=JobManagerCheckpointStorage())
    for execution in graph.deployment_order():
        task_manager.submit_task(DeployTask(graph.task_spec(execution, settings), execution.subtask_index))
    return graph


@pytest.mark.timeout(30)
def test_a_checkpoint_is_acknowledged_by_every_task_as_messages_naming_it(task_manager_and_reports):
    task_manager, _ = task_manager_and_reports
    reports = CheckpointReports()
    env = _env()
    env.from_source(Endless()).rebalance().map(Tracked()).add_sink(Keep())
    job_graph = env.get_job_graph()
    _deploy_checkpointed(job_graph, task_manager, reports)
    reports.wait_for(lambda r: r.states().count("RUNNING") == 2)
    source, mapper = job_graph.vertices
    task_manager.trigger_checkpoint(TriggerCheckpoint(ExecutionAttemptId(job_graph.job_id, source.id, 0, 0), 1, 1234))
    reports.wait_for(lambda r: len(r.acks) == 2)
    acks = sorted(
        (a.job_id, *a.attempt_id.execution_vertex_id, a.attempt_id.attempt, a.checkpoint_id) for a in reports.acks
    )
    assert acks == sorted([(job_graph.job_id, source.id, 0, 0, 1), (job_graph.job_id, mapper.id, 0, 0, 1)])
    source_ack = next(a for a in reports.acks if a.attempt_id.vertex_id == source.id)
    assert source_ack.states, "the source acknowledges its split positions"
    assert reports.declines == []
    task_manager.cancel_task(CancelTask(ExecutionAttemptId(job_graph.job_id, source.id, 0, 0)))
    task_manager.cancel_task(CancelTask(ExecutionAttemptId(job_graph.job_id, mapper.id, 0, 0)))
    reports.wait_for(_terminal(reports, 2))


@pytest.mark.timeout(30)
def test_a_trigger_for_a_task_not_running_here_is_declined_as_closing(task_manager_and_reports):
    task_manager, _ = task_manager_and_reports
    reports = CheckpointReports()
    task_manager.register_job_master("job-x", reports)
    task_manager.trigger_checkpoint(TriggerCheckpoint(ExecutionAttemptId("job-x", 3, 0, 0), 9, 0))
    (decline,) = reports.declines
    assert (decline.job_id, decline.attempt_id.vertex_id, decline.checkpoint_id) == ("job-x", 3, 9)
    assert decline.reason is CheckpointFailureReason.DECLINED_TASK_CLOSING
    task_manager.trigger_checkpoint(
        TriggerCheckpoint(ExecutionAttemptId("unknown-job", 3, 0, 0), 9, 0)
    )  # nobody to tell: nothing
    assert len(reports.declines) == 1


def test_the_responder_speaks_for_its_task_attempt():
    reports = CheckpointReports()
    env = _env()
    env.from_collection([1]).add_sink(Keep())
    graph = ExecutionGraph(env.get_job_graph())
    execution = next(iter(graph))
    execution.transition(ExecutionState.CANCELED)
    execution.reset_for_new_attempt()
    spec = graph.task_spec(execution)
    responder = TaskCheckpointResponder(reports, spec)
    responder.acknowledge(5, {"op": "state"})
    responder.decline(6, CheckpointFailureReason.ASYNC_ERROR, "disk full")
    (ack,), (decline,) = reports.acks, reports.declines
    assert (ack.job_id, *ack.attempt_id.execution_vertex_id, ack.attempt_id.attempt, ack.checkpoint_id, ack.states) == (
        spec.job_id,
        spec.vertex.id,
        0,
        1,
        5,
        {"op": "state"},
    )
    assert (decline.attempt_id.attempt, decline.checkpoint_id, decline.reason, decline.detail) == (
        1,
        6,
        CheckpointFailureReason.ASYNC_ERROR,
        "disk full",
    )


def test_release_job_drops_what_the_task_manager_keeps_for_that_job_only(task_manager_and_reports):
    task_manager, _ = task_manager_and_reports
    released: list[str] = []

    class Receivers:
        def release_job(self, job_id: str) -> None:
            released.append(job_id)

        def shutdown(self) -> None:
            pass

    task_manager._receivers = Receivers()
    task_manager._storages.update({"job-a": object(), "job-b": object()})
    task_manager.release_job(ReleaseJob("job-a"))
    assert released == ["job-a"] and set(task_manager._storages) == {"job-b"}
