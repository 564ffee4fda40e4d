"""The async wait operator (Flink's AsyncWaitOperator): `AsyncDataStream.ordered_wait / unordered_wait (_with_retry)`
with an AsyncFunction whose `async def async_invoke(value)` returns a list of results.

Threads: the coroutines run on the subtask's AsyncLoop (a thread with an asyncio event loop); everything else —
the queue, timeouts, retries, `timeout(value)`, emitting — runs on the task thread. A finished call is handed
back as a mail (`runtime.mail`): the loop thread appends it to a list of completions and posts one mail to drain
them, so many completions cost one handoff.

Protocol, per input record:
1. It enters the queue and its call starts, unless `capacity` records are already in flight: then it waits in
   the backlog (with the watermarks that came after it) and the operator reports its input blocked, so the task
   stops feeding it until calls complete. The backlog holds at most what the task handed over in one step.
2. Its deadline is `timeout` after the first call started. A single processing-time timer watches the earliest
   deadline. At the deadline the call is cancelled and `timeout(value)` runs: its list is the record's results
   (the default `timeout` raises TimeoutError, failing the job).
3. When a call completes, a retry strategy (if any) decides: if its result predicate holds for the results or
   its exception predicate for the error, it may retry (`can_retry(attempt)`), after its back-off, as long as
   the deadline has not passed. Otherwise the results complete the record, or the error fails the job.
4. Completed records leave by the queue's rule (`runtime.async_queue`), each result with its input's timestamp.
   A watermark leaves after every record before it.
Checkpoints: the synchronous part lists every record not emitted yet (in flight, waiting for a retry, completed
but held, or in the backlog) and the watermarks between them, as operator list state; after a restore they are
issued again before any new input, so a checkpoint never loses or repeats a result. At end of input the task
waits, without blocking its mailbox, until every record left (`is_quiescent`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import InvalidJobError
from fluvial.runtime.mailbox_executor import ProcessingTimeMailbox
from fluvial.runtime.operators.async_loop import AsyncLoop
from fluvial.runtime.operators.async_queue import AsyncEntry, OrderedQueue, UnorderedQueue
from fluvial.runtime.operators.base import StreamOperator
from fluvial.runtime.records import RecordBatch, Watermark

if TYPE_CHECKING:
    from fluvial.checkpoint.snapshots import OperatorRestore
    from fluvial.datastream import transformations as t

STATE_NAME = "_async_wait_operator_state_"  # Flink's name for the same list state


class AsyncWaitOperator(StreamOperator):
    holds_input = True
    spec: t.AsyncWaitSpec
    _loop: AsyncLoop | None = None  # from open() to close()

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def initialize_state(self, restore: OperatorRestore | None) -> None:
        self._recovered = restore.operator_state.pop(STATE_NAME, []) if restore is not None else []
        super().initialize_state(restore)

    def open(self) -> None:
        super().open()
        spec = self.spec
        function = spec.function
        self._invoke = function.async_invoke
        self._timeout_function = function.timeout
        self._timeout_ms = spec.timeout_ms
        self._capacity = spec.capacity
        strategy = spec.retry_strategy
        predicate = strategy.get_retry_predicate() if strategy is not None else None
        self._retry = strategy
        self._retry_on_result = predicate.result_predicate() if predicate is not None else None
        self._retry_on_error = predicate.exception_predicate() if predicate is not None else None
        self._queue: OrderedQueue | UnorderedQueue = OrderedQueue() if spec.ordered else UnorderedQueue()
        self._backlog: deque[AsyncEntry | Watermark] = deque()
        self._deadlines: deque[AsyncEntry] = deque()
        self._timer_at: int | None = None
        self._time = self.context.processing_time_service
        self._mailbox = ProcessingTimeMailbox(self._time)
        self._completions: deque[tuple[AsyncEntry, int, Any, BaseException | None]] = deque()
        self._drain_posted = False
        self._emit = self.output.collect
        self._loop = loop = AsyncLoop(f"fluvial-async {self.context.task_info.task_name_with_subtasks}")
        self._start_calls, self._cancel_call = loop.start_all, loop.cancel
        recovered, self._recovered = self._recovered, []
        for kind, payload, timestamp in recovered:  # issued again, before any new input
            self._backlog.append(Watermark(timestamp) if kind == "w" else AsyncEntry(payload, timestamp))
        self._issue_backlog()

    def close(self) -> None:
        try:
            if self._loop is not None:
                self._loop.stop()
        finally:
            super().close()

    # -- input --------------------------------------------------------------------------------------------------

    def process_batch(self, batch: RecordBatch) -> None:
        stamps = batch.timestamps
        if stamps is None:
            self._backlog.extend(AsyncEntry(value, None) for value in batch.values)
        else:
            self._backlog.extend(AsyncEntry(value, ts) for value, ts in zip(batch.values, stamps))
        self._issue_backlog()

    def process_watermark(self, watermark: Watermark) -> None:
        if self._backlog:
            self._backlog.append(watermark)
            return
        self._queue.add_watermark(watermark)
        self._emit_ready()

    def input_blocked(self) -> bool:
        return bool(self._backlog) or self._queue.record_count >= self._capacity

    def is_quiescent(self) -> bool:
        return not self._backlog and not self._queue

    # -- issuing calls ------------------------------------------------------------------------------------------

    def _issue_backlog(self) -> None:
        """Step 1: move records (and the watermarks between them) from the backlog into the queue while there
        is capacity, and start their calls in one handoff."""
        self._emit_ready()  # completed records leave first: until they do, they count against the capacity
        backlog, queue, capacity = self._backlog, self._queue, self._capacity
        if not backlog:
            return
        calls = []
        deadline = self._time.current_processing_time() + self._timeout_ms
        while backlog:
            head = backlog[0]
            if type(head) is Watermark:
                backlog.popleft()
                queue.add_watermark(head)
                continue
            if queue.record_count >= capacity:
                break
            backlog.popleft()
            queue.add(head)
            head.deadline = deadline
            self._deadlines.append(head)
            calls.append(self._call(head))
        if calls:
            self._start_calls(calls)
            self._watch_deadlines()
        self._emit_ready()

    def _call(self, entry: AsyncEntry) -> _Call:
        return _Call(self, entry, entry.generation)

    def _on_done(self, entry: AsyncEntry, generation: int, task: Any) -> None:
        """On the loop thread: hand the outcome to the task thread (one drain mail for many completions)."""
        if task.cancelled():
            return
        error = task.exception()
        self._completions.append((entry, generation, None if error is not None else task.result(), error))
        if not self._drain_posted:
            self._drain_posted = True
            self._mailbox.execute(self._drain_completions)

    # -- outcomes, on the task thread ---------------------------------------------------------------------------

    def _drain_completions(self) -> None:
        self._drain_posted = False  # before draining: a completion appended from now on posts a new mail
        completions = self._completions
        while completions:
            entry, generation, results, error = completions.popleft()
            if entry.done or generation != entry.generation:
                continue  # abandoned by a timeout or superseded by a retry
            self._outcome(entry, results, error)
        self._issue_backlog()

    def _outcome(self, entry: AsyncEntry, results: Any, error: BaseException | None) -> None:
        """Step 3."""
        if error is None:
            results = self._checked(results, entry, "async_invoke")
        if self._retry is not None and self._wants_retry(results, error) and self._retry.can_retry(entry.attempt):
            now = self._time.current_processing_time()
            if now < entry.deadline:  # a back-off that outlasts the deadline ends in timeout(), as in Flink
                due = now + self._retry.get_backoff_time_millis(entry.attempt)
                entry.attempt += 1
                entry.generation += 1
                self._time.register_timer(due, partial(self._retry_call, entry, entry.generation))
                return
        if error is not None:
            error.add_note(f"async_invoke of '{self.name}' failed for {entry.value!r} (attempt {entry.attempt})")
            raise error
        self._complete(entry, results)

    def _wants_retry(self, results: Any, error: BaseException | None) -> bool:
        if error is not None:
            return self._retry_on_error is not None and bool(self._retry_on_error(error))
        return self._retry_on_result is not None and bool(self._retry_on_result(results))

    def _retry_call(self, entry: AsyncEntry, generation: int, now: int) -> None:
        if entry.done or generation != entry.generation:
            return  # timed out while waiting for its back-off
        self._start_calls([self._call(entry)])

    def _checked(self, results: Any, entry: AsyncEntry, method: str) -> list[Any]:
        """The results as a list. Any iterable is taken, as in PyFlink, except str and bytes, which PyFlink
        would split into characters: a function returning one string forgot its brackets. The errors begin
        with PyFlink's own sentences."""
        if isinstance(results, list):
            return results
        if isinstance(results, Iterable) and not isinstance(results, (str, bytes, bytearray)):
            return list(results)
        fix = "return a list of results (e.g. [value], or [] for none)"
        if results is None:
            raise InvalidJobError(
                f"The result of AsyncFunction cannot be none: {method} of '{self.name}' returned "
                f"None for {entry.value!r}; {fix}"
            )
        raise InvalidJobError(
            f"The result of AsyncFunction should be of list type: {method} of '{self.name}' returned "
            f"{type(results).__name__} {results!r} for {entry.value!r}; {fix}"
        )

    def _complete(self, entry: AsyncEntry, results: list[Any]) -> None:
        entry.results = results
        entry.done = True
        entry.task = None
        self._queue.complete(entry)

    # -- timeouts -----------------------------------------------------------------------------------------------

    def _watch_deadlines(self) -> None:
        """One processing-time timer, at the earliest deadline of a record still in flight."""
        deadlines = self._deadlines
        while deadlines and deadlines[0].done:
            deadlines.popleft()
        if deadlines and self._timer_at is None:
            self._timer_at = deadlines[0].deadline
            self._time.register_timer(self._timer_at, self._on_deadline)

    def _on_deadline(self, now: int) -> None:
        """Step 2, for every record whose deadline has passed."""
        self._timer_at = None
        deadlines = self._deadlines
        while deadlines and (deadlines[0].done or deadlines[0].deadline <= now):
            entry = deadlines.popleft()
            if not entry.done:
                entry.generation += 1  # its call's completion, if it still comes, no longer counts
                self._cancel_call(entry.task)
                results = self._timeout_function(entry.value)
                self._complete(entry, self._checked(results, entry, "timeout"))
        self._watch_deadlines()
        self._issue_backlog()

    # -- output -------------------------------------------------------------------------------------------------

    def _emit_ready(self) -> None:
        """Step 4: what the queue lets leave, results batched between watermarks."""
        values: list[Any] = []
        stamps: list[Any] = []
        for item in self._queue.pop_ready():
            if type(item) is Watermark:
                self._flush(values, stamps)
                values, stamps = [], []
                self.current_watermark = item.timestamp
                self.output.emit_watermark(item)
            else:
                values.extend(item.results)
                stamps.extend([item.timestamp] * len(item.results))
        self._flush(values, stamps)

    def _flush(self, values: list[Any], stamps: list[Any]) -> None:
        if values:
            self._emit(RecordBatch(values, None if all(ts is None for ts in stamps) else stamps))

    # -- checkpoints --------------------------------------------------------------------------------------------

    def snapshot_operator_state(self, checkpoint_id: int) -> dict[str, list[Any]]:
        state = super().snapshot_operator_state(checkpoint_id)
        pending: list[tuple[str, Any, int | None]] = []
        for item in (*self._queue.entries(), *self._backlog):
            if type(item) is Watermark:
                pending.append(("w", None, item.timestamp))
            else:
                pending.append(("r", item.value, item.timestamp))
        if pending:
            state[STATE_NAME] = pending
        return state


class _Call:
    """One call of `async_invoke` for one record, as the AsyncLoop runs it (see `runtime.async_loop`)."""

    __slots__ = ("_operator", "_entry", "_generation")

    def __init__(self, operator: AsyncWaitOperator, entry: AsyncEntry, generation: int) -> None:
        self._operator = operator
        self._entry = entry
        self._generation = generation

    def coroutine(self) -> Any:
        return self._operator._invoke(self._entry.value)

    def started(self, task: Any) -> None:
        self._entry.task = task  # so that a timeout can cancel it

    def done(self, task: Any) -> None:
        self._operator._on_done(self._entry, self._generation, task)
