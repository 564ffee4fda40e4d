"""AsyncDataStream (PyFlink `pyflink.datastream.async_data_stream`): applies an AsyncFunction to a stream.

Each call checks its arguments and records an async wait transformation; `fluvial.runtime.operators.async_wait` runs
it (the coroutines on an asyncio loop of the subtask, in-flight records in checkpoints).
"""

from __future__ import annotations

import inspect
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import Duration, to_millis
from fluvial.datastream import transformations as t
from fluvial.datastream.data_stream import DataStream
from fluvial.datastream.functions import AsyncFunction, AsyncRetryStrategy

__all__ = ["AsyncDataStream"]


def _wait(
    data_stream: DataStream,
    async_function: Any,
    timeout: Duration | int,
    capacity: int,
    output_type: Any,
    ordered: bool,
    retry_strategy: Any,
) -> DataStream:
    if not isinstance(data_stream, DataStream):
        raise InvalidJobError(f"AsyncDataStream expects a DataStream first, got {data_stream!r}")
    invoke = getattr(async_function, "async_invoke", None)
    if not isinstance(async_function, AsyncFunction) or not inspect.iscoroutinefunction(invoke):
        raise InvalidJobError(
            f"AsyncDataStream needs an AsyncFunction whose async_invoke is declared 'async def', got {async_function!r}"
        )
    timeout_ms = to_millis(timeout)
    if timeout_ms <= 0:
        raise InvalidJobError(f"the async timeout must be positive, got {timeout_ms} ms")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise InvalidJobError(f"the async capacity (records in flight) must be an integer >= 1, got {capacity!r}")
    if retry_strategy is not None and not isinstance(retry_strategy, AsyncRetryStrategy):
        raise InvalidJobError(f"expected an AsyncRetryStrategy (e.g. FixedDelayRetryStrategy), got {retry_strategy!r}")
    spec = t.AsyncWaitSpec(async_function, data_stream._key(), None, timeout_ms, capacity, ordered, retry_strategy)
    return data_stream._one_input("async wait operator", spec, output_type)


class AsyncDataStream:
    """Helpers applying an AsyncFunction to a stream, keeping input order (`ordered_wait`) or not."""

    @staticmethod
    def unordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        """As `ordered_wait`, emitting each result as soon as it is ready (in order only relative to
        watermarks).

        Args:
            data_stream: The input stream.
            async_function: The AsyncFunction; `async def async_invoke(value)` returns the list of results.
            timeout: How long a record's call may take (ms or a Duration); then `timeout(value)` answers it.
            capacity: The most calls in flight.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        return _wait(data_stream, async_function, timeout, capacity, output_type, False, None)

    @staticmethod
    def ordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        """Apply an AsyncFunction to every record, at most `capacity` calls at once, emitting results in input
        order (no watermark overtakes a pending result).

        Args:
            data_stream: The input stream.
            async_function: The AsyncFunction; `async def async_invoke(value)` returns the list of results.
            timeout: How long a record's call may take (ms or a Duration); then `timeout(value)` answers it.
            capacity: The most calls in flight; the task stops reading input while full.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        return _wait(data_stream, async_function, timeout, capacity, output_type, True, None)

    @staticmethod
    def unordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        """As `unordered_wait`, retrying calls by a retry strategy.

        Args:
            data_stream: The input stream.
            async_function: The AsyncFunction; `async def async_invoke(value)` returns the list of results.
            timeout: How long a record's call may take (ms or a Duration); then `timeout(value)` answers it.
            async_retry_strategy: When and how often to retry.
            capacity: The most calls in flight.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        return _wait(data_stream, async_function, timeout, capacity, output_type, False, async_retry_strategy)

    @staticmethod
    def ordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Duration | int,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        """As `ordered_wait`, retrying calls by a retry strategy.

        Args:
            data_stream: The input stream.
            async_function: The AsyncFunction; `async def async_invoke(value)` returns the list of results.
            timeout: How long a record's call may take (ms or a Duration); then `timeout(value)` answers it.
            async_retry_strategy: When and how often to retry (`fluvial.datastream.async_retry_strategies`).
            capacity: The most calls in flight.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        return _wait(data_stream, async_function, timeout, capacity, output_type, True, async_retry_strategy)
