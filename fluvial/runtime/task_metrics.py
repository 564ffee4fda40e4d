"""The metrics of one running subtask: the counters the runtime bumps, the user metrics of its operators, and
the snapshot that turns them into plain numbers (`fluvial.metrics.snapshot`) for its TaskManager to report.

Where the counting happens, once per buffer or per step, never per record:
- the NetworkInput adds a buffer's length to the head operator's `records_in` (the task's numRecordsIn);
- each chained operator's input boundary adds to that operator's `records_in` (`counted_input`);
- each operator's Output adds what it emits, main and side outputs alike, to its `records_out`;
- each RecordWriter adds what it writes to its `records_out` (the task's numRecordsOut);
- the TaskExecutor times each step (`TaskTime`);
- watermarks are read at snapshot time from the operators (their clock) and their Outputs (the last emitted).
A fused run of stateless operators is one loop, so only its entry and exit are counted; the snapshot derives
its members' counts where they follow (a map emits what it takes) and leaves out the ones that do not.

Threads: everything here runs on the task's thread (counting, and the snapshot, which a task takes in a timer
callback and once more when it ends), so nothing locks.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from typing import Any

from fluvial.common.task_info import TaskInfo
from fluvial.common.time import MIN_WATERMARK, current_millis
from fluvial.metrics.metricbase import Counter, Distribution, Gauge, GenericMetricGroup, Meter, UserMetrics
from fluvial.metrics.names import MetricName as M
from fluvial.metrics.snapshot import TaskMetricsSnapshot, UserMetricSample, vertex_hex_id
from fluvial.metrics.views import RateView
from fluvial.runtime.input_processor import StepResult

logger = logging.getLogger(__name__)

METER_SPAN_MS = 60_000  # Flink's MeterView default: records/s over the last minute
TIME_GAUGE_SPAN_MS = 5_000  # Flink's time gauges (busyTimeMsPerSecond, ...) cover the last update interval
HOST = os.uname().nodename or "localhost"


class TaskTime:
    """Where a task's wall time goes (Flink's busy / back-pressured / idle time).

    Busy: time inside steps that moved input, and inside its timer callbacks. Back-pressured: wall time from a
    step that found an output channel full to the next step that did not. Idle: the rest — waiting for input,
    and waiting for the thread while the other tasks of its TaskManager take their steps."""

    __slots__ = ("started_ns", "busy_ns", "backpressured_ns", "blocked_since_ns")

    def __init__(self, now_ns: int) -> None:
        self.started_ns = now_ns
        self.busy_ns = 0
        self.backpressured_ns = 0
        self.blocked_since_ns = -1

    def after_step(self, result: StepResult, start_ns: int, end_ns: int) -> None:
        if result is StepResult.BLOCKED:
            if self.blocked_since_ns < 0:
                self.blocked_since_ns = start_ns
            return
        if self.blocked_since_ns >= 0:
            self.backpressured_ns += start_ns - self.blocked_since_ns
            self.blocked_since_ns = -1
        if result is not StepResult.IDLE:
            self.busy_ns += end_ns - start_ns

    def add_busy(self, start_ns: int, end_ns: int) -> None:
        self.busy_ns += end_ns - start_ns

    def totals_ms(self, now_ns: int) -> tuple[float, float, float]:
        """(busy, back-pressured, idle) milliseconds since the task started."""
        backpressured = self.backpressured_ns
        if self.blocked_since_ns >= 0:
            backpressured += now_ns - self.blocked_since_ns
        idle = max(0, now_ns - self.started_ns - self.busy_ns - backpressured)
        return self.busy_ns / 1e6, backpressured / 1e6, idle / 1e6


class OperatorMetrics:
    """One operator's counters and the metric group its user function registers into."""

    __slots__ = ("operator_id", "name", "records_in", "records_out", "user", "group", "operator")

    def __init__(self, operator_id: str, name: str, scope: tuple[str, ...], variables: dict[str, str]) -> None:
        self.operator_id = operator_id
        self.name = name
        self.records_in = Counter()
        self.records_out = Counter()
        self.user = UserMetrics()
        self.group = GenericMetricGroup(self.user, scope, variables)
        self.operator: Any = None  # the operator that runs it (a fused run for its members), once bound


def detached_operator_metrics(name: str, operator_id: str = "") -> OperatorMetrics:
    """The metrics of an operator outside any task (an operator harness): counted, reported nowhere."""
    return OperatorMetrics(operator_id, name, (HOST, "taskmanager", "harness", name, "0"), {"<operator_name>": name})


class TaskMetrics:
    def __init__(
        self, info: TaskInfo, vertex_id: int, job_name: str, task_manager_id: str = "", is_source: bool = False
    ) -> None:
        self.info = info
        self.vertex_id = vertex_id
        self.job_name = job_name
        self.task_manager_id = task_manager_id or "local"
        self.is_source = is_source
        self.time = TaskTime(time.perf_counter_ns())
        self.operators: dict[str, OperatorMetrics] = {}
        self._fused: list[tuple[list[OperatorMetrics], list[bool]]] = []
        self._head: OperatorMetrics | None = None
        self._writers: list[Any] = []
        self.input_channels: list[Any] = []  # set with the task's network input
        self.debloater: Any = None  # the task's BufferDebloater, with buffer debloating on
        self._rates: dict[tuple[str, str], RateView] = {}
        self._broken_gauges: set[tuple[str, str]] = set()

    # -- building -----------------------------------------------------------------------------------------------

    def operator(self, operator_id: str, name: str) -> OperatorMetrics:
        """The metrics of the chain's operator `operator_id` (created on first request, in chain order)."""
        metrics = self.operators.get(operator_id)
        if metrics is None:
            info = self.info
            scope = (HOST, "taskmanager", self.task_manager_id, self.job_name, name, str(info.subtask_index))
            variables = {
                "<host>": HOST,
                "<tm_id>": self.task_manager_id,
                "<job_id>": info.job_id,
                "<job_name>": self.job_name,
                "<task_id>": vertex_hex_id(info.job_id, self.vertex_id),
                "<task_name>": info.task_name,
                "<task_attempt_num>": str(info.attempt_number),
                "<subtask_index>": str(info.subtask_index),
                "<operator_id>": operator_id,
                "<operator_name>": name,
            }
            metrics = self.operators[operator_id] = OperatorMetrics(operator_id, name, scope, variables)
        return metrics

    def bind(self, chain: Any, writers: Iterable[Any]) -> None:
        """After the chain is built: which operator runs each metric's operator, the fused runs, and where
        records leave (`writers`)."""
        for operator in chain.order:
            if operator.members is not None:
                members = [member.context.metrics for member in operator.members]
                for member in members:
                    member.operator = operator
                self._fused.append((members, [member.one_output_per_input for member in operator.members]))
            else:
                operator.context.metrics.operator = operator
        head = chain.head
        self._head = (head if head.members is None else head.members[0]).context.metrics
        self._writers = list(writers)

    @property
    def records_in(self) -> Counter:
        """The counter the task's network input adds each buffer to (the head operator's numRecordsIn)."""
        if self._head is None:
            raise RuntimeError("TaskMetrics.bind(chain, writers) must come before the task's input is built")
        return self._head.records_in

    # -- the snapshot -------------------------------------------------------------------------------------------

    def snapshot(self, final: bool = False) -> TaskMetricsSnapshot:
        now = time.perf_counter_ns()
        info = self.info
        snapshot = TaskMetricsSnapshot(
            info.job_id,
            self.job_name,
            self.vertex_id,
            info.task_name,
            info.subtask_index,
            info.attempt_number,
            self.task_manager_id,
            HOST,
            current_millis(),
            final=final,
        )
        self._task_values(snapshot.task, now)
        counts = self._operator_counts()
        for operator_id, metrics in self.operators.items():
            snapshot.operator_names[operator_id] = metrics.name
            snapshot.operators[operator_id] = self._operator_values(metrics, counts.get(operator_id), now)
            self._user_values(metrics, snapshot.user, now)
        return snapshot

    def _rate(self, scope: str, name: str, span_ms: int, now: int, total: float) -> float:
        view = self._rates.get((scope, name))
        if view is None:  # everything counted from zero when the task started: the first snapshot has a rate
            view = self._rates[(scope, name)] = RateView(span_ms)
            view.update(self.time.started_ns, 0)
        return view.update(now, total)

    def _task_values(self, values: dict[str, float], now: int) -> None:
        records_in = 0 if self.is_source or self._head is None else self._head.records_in.count
        records_out = sum(writer.records_out for writer in self._writers)
        bytes_in = sum(serialized_bytes(channel) for channel in self.input_channels)
        bytes_out = sum(serialized_bytes(channel) for writer in self._writers for channel in writer.channels)
        for name, rate, total in (
            (M.NUM_RECORDS_IN, M.NUM_RECORDS_IN_RATE, records_in),
            (M.NUM_RECORDS_OUT, M.NUM_RECORDS_OUT_RATE, records_out),
            (M.NUM_BYTES_IN, M.NUM_BYTES_IN_RATE, bytes_in),
            (M.NUM_BYTES_OUT, M.NUM_BYTES_OUT_RATE, bytes_out),
        ):
            values[name.value] = total
            values[rate.value] = self._rate("", name.value, METER_SPAN_MS, now, total)
        debloater = self.debloater
        if debloater is not None:
            values[M.DEBLOATED_BUFFER_SIZE.value] = debloater.buffer_size
            values[M.ESTIMATED_TIME_TO_CONSUME_BUFFERS.value] = debloater.estimated_time_to_consume_ms
        head = self._head.operator if self._head is not None else None
        values[M.CURRENT_INPUT_WATERMARK.value] = (
            getattr(head, "current_watermark", MIN_WATERMARK) if not self.is_source else MIN_WATERMARK
        )
        busy, backpressured, idle = self.time.totals_ms(now)
        for total_name, rate_name, total in (
            (M.ACC_BUSY_TIME, M.BUSY_TIME, busy),
            (M.ACC_BACK_PRESSURED_TIME, M.BACK_PRESSURED_TIME, backpressured),
            (M.ACC_IDLE_TIME, M.IDLE_TIME, idle),
        ):
            values[total_name.value] = round(total)
            per_second = self._rate("", total_name.value, TIME_GAUGE_SPAN_MS, now, total)  # ms per second
            values[rate_name.value] = min(1000.0, max(0.0, per_second))

    def _operator_counts(self) -> dict[str, tuple[int | None, int | None]]:
        """(records in, records out) of each operator; None where a fused run hides it."""
        counts: dict[str, tuple[int | None, int | None]] = {}
        for metrics in self.operators.values():
            records_out = metrics.records_out.count
            records_in = records_out if self.is_source and metrics is self._head else metrics.records_in.count
            counts[metrics.operator_id] = (records_in, records_out)
        for members, is_map in self._fused:
            derived = fused_member_counts(members[0].records_in.count, members[-1].records_out.count, is_map)
            for member, pair in zip(members, derived):
                counts[member.operator_id] = pair
        return counts

    def _operator_values(
        self, metrics: OperatorMetrics, counts: tuple[int | None, int | None] | None, now: int
    ) -> dict[str, float]:
        values: dict[str, float] = {}
        records_in, records_out = counts if counts is not None else (None, None)
        for name, rate, total in (
            (M.NUM_RECORDS_IN, M.NUM_RECORDS_IN_RATE, records_in),
            (M.NUM_RECORDS_OUT, M.NUM_RECORDS_OUT_RATE, records_out),
        ):
            if total is not None:
                values[name.value] = total
                values[rate.value] = self._rate(metrics.operator_id, name.value, METER_SPAN_MS, now, total)
        operator = metrics.operator
        if operator is not None:
            values[M.CURRENT_INPUT_WATERMARK.value] = getattr(operator, "current_watermark", MIN_WATERMARK)
            output = getattr(operator, "output", None)
            values[M.CURRENT_OUTPUT_WATERMARK.value] = getattr(output, "current_watermark", MIN_WATERMARK)
        return values

    def _user_values(self, metrics: OperatorMetrics, samples: list[UserMetricSample], now: int) -> None:
        for identifier, (key, metric) in metrics.user.entries.items():
            variables = dict(key.variables)
            for suffix, value in self._user_metric_values(metrics, identifier, metric, now):
                samples.append(
                    UserMetricSample(
                        metrics.operator_id, identifier + suffix, key.logical_name + suffix, variables, value
                    )
                )

    def _user_metric_values(
        self, metrics: OperatorMetrics, identifier: str, metric: Any, now: int
    ) -> list[tuple[str, float]]:
        if isinstance(metric, Counter):
            return [("", metric.count)]
        if isinstance(metric, Meter):
            metric.rate = self._rate(
                metrics.operator_id, identifier, metric.time_span_in_seconds * 1000, now, metric.count
            )
            return [("", metric.rate)]
        if isinstance(metric, Distribution):
            pairs = [
                ("_count", metric.count),
                ("_sum", metric.sum),
                ("_min", metric.min),
                ("_max", metric.max),
                ("_mean", metric.get_mean()),
            ]
            return [(suffix, value) for suffix, value in pairs if value is not None]
        if isinstance(metric, Gauge):
            return self._gauge_value(metrics, identifier, metric)
        return []

    def _gauge_value(self, metrics: OperatorMetrics, identifier: str, gauge: Gauge) -> list[tuple[str, float]]:
        try:
            value = gauge.get_value()
        except Exception as error:  # noqa: BLE001 - a broken gauge must not break the task; it is reported once
            self._warn_gauge(metrics, identifier, f"raised {type(error).__name__}: {error}")
            return []
        if isinstance(value, bool):
            return [("", float(value))]
        if isinstance(value, (int, float)):
            return [("", value)]
        self._warn_gauge(metrics, identifier, f"returned {type(value).__name__} {value!r}, not a number")
        return []

    def _warn_gauge(self, metrics: OperatorMetrics, identifier: str, problem: str) -> None:
        if (metrics.operator_id, identifier) not in self._broken_gauges:
            self._broken_gauges.add((metrics.operator_id, identifier))
            logger.warning(
                "gauge '%s' of operator '%s' in %s %s; it is not reported until it returns a number",
                identifier,
                metrics.name,
                self.info.task_name_with_subtasks,
                problem,
            )


def fused_member_counts(records_in: int, records_out: int, is_map: list[bool]) -> list[tuple[int | None, int | None]]:
    """(in, out) of each member of a fused run from the run's own in and out: a one-for-one member (a map, a
    running reduce: `is_map`) emits what it takes,
    and each member takes what the one before emitted; what no rule reaches (behind a filter, from either end)
    is None — unknown, and not reported."""
    size = len(is_map)
    ins: list[int | None] = [None] * size
    outs: list[int | None] = [None] * size
    ins[0], outs[-1] = records_in, records_out
    for index in range(size):
        if ins[index] is not None and is_map[index] and outs[index] is None:
            outs[index] = ins[index]
        if index + 1 < size and outs[index] is not None:
            ins[index + 1] = outs[index]
    for index in reversed(range(size)):
        if outs[index] is not None and is_map[index] and ins[index] is None:
            ins[index] = outs[index]
        if index > 0 and ins[index] is not None and outs[index - 1] is None:
            outs[index - 1] = ins[index]
    return list(zip(ins, outs))


def serialized_bytes(channel: Any) -> int:
    """The bytes a channel sent or received serialized. A channel that crosses a process boundary pickles its
    buffers and counts their bytes in `serialized_bytes`; an in-process channel hands the same objects over,
    serializes nothing, and counts none."""
    return getattr(channel, "serialized_bytes", 0)
