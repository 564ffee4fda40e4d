"""MetricStore (Flink's): the latest metrics snapshot of every subtask of one job, kept by its JobMaster for
the REST API, the dashboard and Prometheus.

Thread-safe: TaskManagers report from their threads (or, from other processes, from the connection's), REST
handlers read from theirs. Rules, numbered:
1. A subtask's snapshot replaces the one held for it when it is of the same attempt or a newer one: counters
   start again at zero with each attempt, as in Flink.
2. A report of an older attempt arriving late (a cancelled attempt's final words) is dropped.
3. A final snapshot (taken as the attempt ended) is not replaced by a periodic one of the same attempt that
   was overtaken on the way.
"""

from __future__ import annotations

import threading

from fluvial.metrics.snapshot import TaskMetricsSnapshot


class MetricStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[tuple[int, int], TaskMetricsSnapshot] = {}

    def update(self, snapshot: TaskMetricsSnapshot) -> bool:
        """Keep `snapshot` unless rules 2 or 3 drop it; True when kept."""
        key = snapshot.task_key
        with self._lock:
            held = self._tasks.get(key)
            if held is not None:
                if snapshot.attempt < held.attempt:
                    return False
                if snapshot.attempt == held.attempt and held.final and not snapshot.final:
                    return False
            self._tasks[key] = snapshot
            return True

    def tasks(self) -> list[TaskMetricsSnapshot]:
        """Every subtask's latest snapshot, by vertex id and subtask index."""
        with self._lock:
            return [self._tasks[key] for key in sorted(self._tasks)]

    def task(self, vertex_id: int, subtask_index: int) -> TaskMetricsSnapshot | None:
        with self._lock:
            return self._tasks.get((vertex_id, subtask_index))
