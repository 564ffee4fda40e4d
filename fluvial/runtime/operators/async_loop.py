"""AsyncLoop: an asyncio event loop on a thread of its own, where one subtask's AsyncFunction coroutines run, so
the task thread never waits for them (DESIGN 4: one thread owns a task; nothing blocks its mailbox).

Contract:
- `start_all(calls)` is called on the task thread and returns at once; on the loop thread each AsyncCall's
  `coroutine()` becomes an asyncio Task, `started(task)` is told it, and its completion calls `done(task)`
  there. One thread handoff per buffer of calls, not per record.
- `started` and `done` run on the loop thread: they must only record the task or hand the outcome over (to a
  MailboxExecutor), never touch operator state.
- `cancel(task)` may be called from any thread; a cancelled task's `on_done` sees `task.cancelled()`.
- `stop()` cancels what still runs, stops the loop and joins its thread (bounded); it is idempotent.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class AsyncCall(Protocol):
    def coroutine(self) -> Coroutine[Any, Any, Any]: ...

    def started(self, task: asyncio.Future[Any]) -> None: ...

    def done(self, task: asyncio.Future[Any]) -> None: ...


STOP_TIMEOUT_SECONDS = 5.0


class AsyncLoop:
    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._stopped = False
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(self._loop)
                for task in pending:
                    task.cancel()
                if pending:  # let cancelled coroutines run their finally blocks
                    self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                self._loop.close()

    def start_all(self, calls: Sequence[AsyncCall]) -> None:
        if calls and not self._stopped:
            self._loop.call_soon_threadsafe(self._start, calls)

    def _start(self, calls: Sequence[AsyncCall]) -> None:
        create_task = self._loop.create_task
        task: asyncio.Future[Any]  # a Task, or a future that failed when the coroutine could not be created
        for call in calls:
            try:
                task = create_task(call.coroutine())
            except BaseException as error:  # noqa: BLE001 - handed over like any failed call
                task = self._failed(error)
            call.started(task)
            task.add_done_callback(call.done)

    def _failed(self, error: BaseException) -> asyncio.Future[Any]:
        """A future already failed with `error` (creating the coroutine itself raised)."""
        future = self._loop.create_future()
        future.set_exception(error)
        return future

    def cancel(self, task: asyncio.Future[Any] | None) -> None:
        if task is not None and not self._stopped:
            self._loop.call_soon_threadsafe(task.cancel)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self._loop.call_soon_threadsafe(self._loop.stop)
        except RuntimeError:  # the loop is already closed
            return
        if threading.current_thread() is not self._thread:
            self._thread.join(STOP_TIMEOUT_SECONDS)
            if self._thread.is_alive():
                logger.warning(
                    "the asyncio loop %s did not stop within %.0f s: a coroutine ignores cancellation",
                    self._thread.name,
                    STOP_TIMEOUT_SECONDS,
                )
