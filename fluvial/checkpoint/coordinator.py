"""CheckpointCoordinator (DESIGN 2.3, seed 001): triggers checkpoints, collects acknowledgements, completes,
retains and announces them. It lives in the JobMaster; TaskManager threads call it with acks.

Protocol, numbered:
1. A timer thread triggers every `interval` ms, respecting the minimum pause after the last completion and
   the maximum of concurrent checkpoints, and only while every task runs (a plan of tasks to trigger — the
   sources — and tasks to wait for — all).
2. A PendingCheckpoint collects one ack per task (AckResult says how each ack was taken).
3. With every ack in, metadata is written (`_metadata` with checksums), a CompletedCheckpoint is added to the
   store (which keeps the newest N), and every task is notified: two-phase-commit sinks commit then.
4. A decline, a timeout or a failover aborts the pending checkpoint and notifies tasks; the failure manager
   counts consecutive failures and fails the job past the tolerable number.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from fluvial.checkpoint.failure_manager import CheckpointFailureManager, FailureVerdict
from fluvial.checkpoint.pending import AckResult, CheckpointFailureReason, PendingCheckpoint
from fluvial.checkpoint.store import CompletedCheckpoint, CompletedCheckpointStore
from fluvial.common.future import CompletableFuture

TICK_SECONDS = 0.01  # how soon to look again when a trigger is due but must wait (pause, concurrency)
MAX_SLEEP_SECONDS = 1.0

Task = tuple[int, int]  # (vertex id, subtask index)


class CheckpointCoordinator:
    def __init__(
        self,
        *,
        job_id: str,
        settings: Any,
        storage: Any,
        store: CompletedCheckpointStore,
        tasks_to_trigger: list[Task],
        tasks_to_ack: set[Task],
        max_parallelism: dict[int, int],
        trigger_task: Callable[[Task, int, int, str | None], None],
        notify_tasks: Callable[[int, bool], None],
        all_tasks_running: Callable[[], bool],
        fail_job: Callable[[BaseException], None],
        first_checkpoint_id: int = 1,
    ) -> None:
        self.job_id = job_id
        self.settings = settings
        self.storage = storage
        self.store = store
        self._to_trigger = tasks_to_trigger
        self._to_ack = set(tasks_to_ack)
        self._max_parallelism = max_parallelism
        self._trigger_task = trigger_task
        self._notify_tasks = notify_tasks
        self._all_running = all_tasks_running
        self._fail_job = fail_job
        self._failures = CheckpointFailureManager(settings.tolerable_failures)
        self._lock = threading.RLock()
        self._pending: dict[int, PendingCheckpoint] = {}
        self._finalizing: set[int] = set()  # fully acknowledged, metadata being written or tasks being told
        self._futures: dict[int, CompletableFuture] = {}
        self._next_id = first_checkpoint_id
        self._last_completion = 0.0
        self._next_trigger = time.monotonic() + settings.interval_ms / 1000
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # -- scheduling ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the trigger thread. A job may end (and `stop()` run, on a task thread) while this is being
        called: the thread is published only once started, and never started after a stop."""
        if self.settings.interval_ms > 0:
            with self._lock:
                if self._stopped.is_set():
                    return
                thread = threading.Thread(target=self._run, name=f"checkpoint-coordinator-{self.job_id[:8]}",
                                          daemon=True)
                thread.start()
                self._thread = thread

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(2)

    def _run(self) -> None:
        """Sleep until the next trigger or the next timeout is due, not on a fixed tick: a thread waking a
        hundred times a second takes the GIL from the task threads each time (a measured 15% of J2)."""
        while not self._stopped.wait(self._sleep_time()):
            now = time.monotonic()
            self._expire(now)
            if now >= self._next_trigger and self._may_trigger(now):
                self._next_trigger = now + self.settings.interval_ms / 1000
                self.trigger_checkpoint()

    def _sleep_time(self) -> float:
        now = time.monotonic()
        due = self._next_trigger
        timeout = self.settings.timeout_ms / 1000
        with self._lock:
            for pending in self._pending.values():
                due = min(due, pending.started_at + timeout)
        if due <= now:
            return TICK_SECONDS  # due but held back (pause, concurrency, tasks not running): look again soon
        return min(due - now, MAX_SLEEP_SECONDS)

    def _may_trigger(self, now: float) -> bool:
        with self._lock:
            if len(self._pending) + len(self._finalizing) >= self.settings.max_concurrent:
                return False
            if now - self._last_completion < self.settings.min_pause_ms / 1000:
                return False
        return self._all_running()

    def _expire(self, now: float) -> None:
        timeout = self.settings.timeout_ms / 1000
        with self._lock:
            expired = [cid for cid, p in self._pending.items() if now - p.started_at > timeout]
        for checkpoint_id in expired:
            self._abort(checkpoint_id, CheckpointFailureReason.TIMEOUT, "it expired before every task acknowledged it")

    # -- triggering ---------------------------------------------------------------------------------------------

    def trigger_checkpoint(self, is_savepoint: bool = False, savepoint_storage: Any = None,
                           savepoint_dir: str | None = None) -> CompletableFuture:
        """Start a checkpoint (or a savepoint into `savepoint_dir`, written through `savepoint_storage`) now; the
        future completes with the CompletedCheckpoint."""
        future = CompletableFuture()
        if self._stopped.is_set():  # the job has ended: no task would ever answer
            future.set_exception(RuntimeError(
                f"checkpoint of job {self.job_id} not triggered: {CheckpointFailureReason.COORDINATOR_SHUTDOWN.value}"))
            return future
        with self._lock:
            checkpoint_id = self._next_id
            self._next_id += 1
            pending = PendingCheckpoint(checkpoint_id, int(time.time() * 1000), set(self._to_ack),
                                        is_savepoint=is_savepoint, job_id=self.job_id,
                                        max_parallelism=self._max_parallelism)
            pending.started_at = time.monotonic()
            pending.target_storage = savepoint_storage or self.storage
            self._pending[checkpoint_id] = pending
            self._futures[checkpoint_id] = future
        for task in self._to_trigger:
            self._trigger_task(task, checkpoint_id, pending.timestamp, savepoint_dir)
        if not is_savepoint and not self._all_running():
            # A task ended between the check in _may_trigger and now: it will never acknowledge. Whichever of
            # this check and the JobMaster's `abort_pending_awaiting` comes second sees the other's effect.
            self._abort(checkpoint_id, CheckpointFailureReason.NOT_ALL_TASKS_RUNNING,
                        "a task ended while it was being triggered")
        return future

    # -- acknowledgements ---------------------------------------------------------------------------------------

    def receive_acknowledge(self, task: Task, checkpoint_id: int, states: dict) -> AckResult:
        with self._lock:
            pending = self._pending.get(checkpoint_id)
            if pending is None:
                return AckResult.UNKNOWN if checkpoint_id >= self._next_id else AckResult.DISCARDED
            result = pending.acknowledge(task, states)
            if result is not AckResult.SUCCESS or not pending.is_fully_acknowledged:
                return result
            del self._pending[checkpoint_id]
            self._finalizing.add(checkpoint_id)
        self._complete(pending)
        return result

    def receive_decline(self, task: Task, checkpoint_id: int, reason: str) -> None:
        self._abort(checkpoint_id, CheckpointFailureReason.DECLINED, f"task {task} declined: {reason}",
                    from_task=True)

    def _complete(self, pending: PendingCheckpoint) -> None:
        """Step 3. Until every task has been notified, the checkpoint still counts against max_concurrent: so
        the next trigger is sent after this notification (each task hears of n before it snapshots n + 1),
        and never while the metadata of n is being written."""
        try:
            self._finalize_and_notify(pending)
        finally:
            with self._lock:
                self._finalizing.discard(pending.checkpoint_id)

    def _finalize_and_notify(self, pending: PendingCheckpoint) -> None:
        future = self._futures.pop(pending.checkpoint_id, None)
        try:
            completed = pending.finalize(pending.target_storage)
            if not pending.is_savepoint:
                self.store.add(completed)
        except BaseException as error:  # noqa: BLE001 - storage trouble fails this checkpoint only
            self._count_failure(CheckpointFailureReason.IO_ERROR, pending.checkpoint_id, error, pending.is_savepoint)
            self._notify_tasks(pending.checkpoint_id, False)
            if future is not None:
                future.set_exception(error)
            return
        with self._lock:
            self._last_completion = time.monotonic()
            self._failures.handle_success(pending.checkpoint_id)
        self._notify_tasks(pending.checkpoint_id, True)
        if future is not None:
            future.set_result(completed)

    def _abort(self, checkpoint_id: int, reason: CheckpointFailureReason, message: str,
               from_task: bool = False) -> None:
        with self._lock:
            pending = self._pending.pop(checkpoint_id, None)
            future = self._futures.pop(checkpoint_id, None)
        if pending is None:
            return
        pending.abort(reason)
        self._notify_tasks(checkpoint_id, False)
        error = RuntimeError(f"checkpoint {checkpoint_id} of job {self.job_id} failed: {message}")
        if future is not None:
            future.set_exception(error)
        self._count_failure(reason, checkpoint_id, error, pending.is_savepoint, from_task)

    def _count_failure(self, reason: CheckpointFailureReason, checkpoint_id: int, error: BaseException,
                       is_savepoint: bool, from_task: bool = False) -> None:
        with self._lock:
            verdict = self._failures.handle_failure(reason, checkpoint_id, cause=error, from_task=from_task,
                                                    is_savepoint=is_savepoint)
        if verdict is FailureVerdict.FAIL_JOB:
            self._fail_job(self._failures.job_failure)

    def abort_pending_awaiting(self, task: Task, reason: CheckpointFailureReason) -> None:
        """`task` ended (finished its input) without acknowledging some pending checkpoints: they can never
        complete. Abort them now with `reason`, which does not count as a checkpoint failure, rather than let
        them expire as a TIMEOUT, which would."""
        with self._lock:
            waiting = [cid for cid, p in self._pending.items() if task in p.not_yet_acknowledged]
        for checkpoint_id in waiting:
            self._abort(checkpoint_id, reason, f"task {task} ended before acknowledging it")

    def abort_all_pending(self, reason: CheckpointFailureReason) -> None:
        """On failover or shutdown: every pending checkpoint is aborted (without counting towards failure)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            futures, self._futures = self._futures, {}
        for checkpoint_id, checkpoint in pending.items():
            checkpoint.abort(reason)
            future = futures.get(checkpoint_id)
            if future is not None:
                future.set_exception(RuntimeError(f"checkpoint {checkpoint_id} aborted: {reason.value}"))

    def latest_completed(self) -> CompletedCheckpoint | None:
        return self.store.latest()

    @property
    def next_checkpoint_id(self) -> int:
        return self._next_id
