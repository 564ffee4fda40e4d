"""A small completable future (PyFlink returns futures from JobClient); `concurrent.futures` would cost a
tenth of a small job's start-up in imports alone."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

T = TypeVar("T")


class CancelledError(Exception):
    """The future was cancelled before it completed (Java's CancellationException): `result()` raises it."""


class CompletableFuture(Generic[T]):
    """The result of an asynchronous operation (PyFlink's `CompletableFuture`): a job's result, a savepoint's
    path, a job's status. `result()` waits for it. `CompletableFuture[T]` completes with a T.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._result: T | None = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[CompletableFuture[T]], None]] = []
        self._cancelled = False

    def done(self) -> bool:
        """Whether the operation has finished (with a value or an exception)."""
        return self._event.is_set()

    def cancel(self) -> bool:
        """Complete the future with a CancelledError if it is not done yet (Java's `cancel`). Only the future
        is cancelled, not the operation behind it: to stop a job, use `JobClient.cancel()`.

        Returns:
            Whether the future is now cancelled.
        """
        self._complete(None, CancelledError("the future was cancelled before it completed"), cancelling=True)
        return self._cancelled

    def cancelled(self) -> bool:
        """Whether the future was cancelled before it completed."""
        return self._cancelled

    def result(self, timeout: float | None = None) -> T:
        """Wait for the value.

        Args:
            timeout: Seconds to wait at most; None waits as long as it takes.

        Returns:
            The value.

        Raises:
            TimeoutError: not done within `timeout`.
            Exception: the operation's own failure.
        """
        if not self._event.wait(timeout):
            raise TimeoutError(f"the future was not completed within {timeout} s")
        if self._exception is not None:
            raise self._exception
        return cast(T, self._result)  # set_result stored a T (set_exception, which stores None, raised above)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """Wait for the outcome and return its exception, or None when it succeeded.

        Args:
            timeout: Seconds to wait at most.

        Returns:
            The exception, or None.
        """
        if not self._event.wait(timeout):
            raise TimeoutError(f"the future was not completed within {timeout} s")
        return self._exception

    def set_result(self, result: T) -> None:
        """Complete the future with a value (the side that runs the operation calls it).

        Args:
            result: The value.
        """
        self._complete(result, None)

    def set_exception(self, exception: BaseException) -> None:
        """Complete the future with a failure.

        Args:
            exception: The failure.
        """
        self._complete(None, exception)

    def add_done_callback(self, callback: Callable[[CompletableFuture[T]], None]) -> None:
        """Call `callback(future)` when the operation finishes (at once if it has).

        Args:
            callback: The function.
        """
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def _complete(self, result: T | None, exception: BaseException | None, cancelling: bool = False) -> None:
        with self._lock:
            if self._event.is_set():
                if self._cancelled or cancelling:
                    return  # an outcome after a cancel is dropped; a cancel after an outcome does nothing
                raise RuntimeError("the future is already completed")
            self._cancelled = cancelling
            self._result, self._exception = result, exception
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)


def forward(source: CompletableFuture[T], target: CompletableFuture[T]) -> None:
    """Complete `target` as `source` completed (call once `source` is done, e.g. from its done callback)."""
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())
