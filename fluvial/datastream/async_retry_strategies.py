"""Retry strategies for async I/O (PyFlink `pyflink.datastream.async_retry_strategies`).

`current_attempts` counts the attempts made so far, from 1: a strategy with `max_attempts=3` allows three
retries after the first call. Exponential back-off starts at `initial_delay`, multiplies by `multiplier` per
retry and stays at most `max_retry_delay`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from fluvial.common.errors import InvalidJobError
from fluvial.datastream.functions import AsyncRetryPredicate, AsyncRetryStrategy

OUT = TypeVar("OUT")

__all__ = ["ExponentialBackoffDelayRetryStrategy", "FixedDelayRetryStrategy", "NoRetryStrategy", "RetryPredicate"]

ResultPredicate = Callable[[list], bool] | None
ExceptionPredicate = Callable[[BaseException], bool] | None


def _positive(value: Any, what: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidJobError(f"{what} must be a number greater than zero, got {value!r}")
    return value


class RetryPredicate(AsyncRetryPredicate, Generic[OUT]):
    """A pair of predicates: on a result (retry when it returns True) and on an exception."""

    def __init__(self, result_predicate: ResultPredicate, exception_predicate: ExceptionPredicate) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate:
        """The predicate on results, or None."""
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate:
        """The predicate on exceptions, or None."""
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Never retry (the default of `*_wait_with_retry`)."""

    def can_retry(self, current_attempts: int) -> bool:
        """False."""
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """-1: there is no next attempt."""
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """A predicate that retries nothing."""
        return RetryPredicate(None, None)


class FixedDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Retry up to a number of attempts, a fixed delay apart (PyFlink's `FixedDelayRetryStrategy`);
    built with `AsyncRetryStrategies.FixedDelayRetryStrategyBuilder`.
    """

    def __init__(
        self,
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate = None,
        exception_predicate: ExceptionPredicate = None,
    ) -> None:
        self._max_attempts = _positive(max_attempts, "max_attempts")
        self._backoff_time_millis = _positive(backoff_time_millis, "backoff_time_millis")
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        """Whether fewer than the maximum attempts were made.

        Args:
            current_attempts: Attempts so far.

        Returns:
            True to retry.
        """
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """The fixed delay, in ms.

        Args:
            current_attempts: Attempts so far.

        Returns:
            The delay.
        """
        return int(self._backoff_time_millis)

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """The predicates on results and exceptions that decide a retry."""
        return self._predicate


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Retry up to a number of attempts with a delay that grows by a multiplier up to a maximum (PyFlink's
    `ExponentialBackoffDelayRetryStrategy`).
    """

    def __init__(
        self,
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate = None,
        exception_predicate: ExceptionPredicate = None,
    ) -> None:
        self._max_attempts = _positive(max_attempts, "max_attempts")
        self._initial_delay = _positive(initial_delay, "initial_delay")
        self._max_retry_delay = _positive(max_retry_delay, "max_retry_delay")
        self._multiplier = _positive(multiplier, "multiplier")
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        """Whether fewer than the maximum attempts were made.

        Args:
            current_attempts: Attempts so far.

        Returns:
            True to retry.
        """
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """Derived from the attempt number alone, so one strategy object can serve many records at once."""
        if current_attempts <= 1:
            return int(self._initial_delay)
        delay = self._initial_delay * self._multiplier ** (current_attempts - 1)
        return int(min(delay, self._max_retry_delay))

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """The predicates on results and exceptions that decide a retry."""
        return self._predicate


NO_RETRY_STRATEGY: NoRetryStrategy = NoRetryStrategy()
