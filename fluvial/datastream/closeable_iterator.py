"""CloseableIterator (PyFlink's): the records of `execute_and_collect`, read from the buffer the job's collect
sink fills."""

from __future__ import annotations

from typing import Any, Protocol


class ResultBuffer(Protocol):
    """Where a job's collected records arrive (the cluster's collect buffer)."""

    END: Any

    def take(self) -> Any:
        """The next list of records, or END once the job has ended; blocks until there is one."""
        ...

    def close(self) -> None:
        """The client reads no more: the job's sinks drop their records from now on."""
        ...

    @property
    def closed(self) -> Any: ...


class CloseableIterator:
    """The records of `execute_and_collect`, in arrival order. Also a context manager: leaving it (or
    `close()`) cancels a job that is still running. A job failure is raised from `next()`."""

    def __init__(self, client: Any, buffer: ResultBuffer) -> None:
        self._client = client
        self._buffer = buffer
        self._pending: list = []
        self._position = 0
        self._done = False

    def __iter__(self) -> "CloseableIterator":
        return self

    def __next__(self) -> Any:
        while self._position >= len(self._pending):
            if self._done:
                raise StopIteration
            item = self._buffer.take()
            if item is self._buffer.END:
                self._done = True
                self._raise_failure()
                raise StopIteration
            self._pending, self._position = item, 0
        value = self._pending[self._position]
        self._position += 1
        return value

    def _raise_failure(self) -> None:
        result = self._client.get_job_execution_result()
        if result.exception() is not None and not self._buffer.closed.is_set():
            raise result.exception()

    def close(self) -> None:
        if not self._buffer.closed.is_set():
            self._buffer.close()
            if not self._client.get_job_execution_result().done():
                self._client.cancel()
        self._done = True
        self._pending, self._position = [], 0  # a closed iterator yields nothing more

    def __enter__(self) -> "CloseableIterator":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
