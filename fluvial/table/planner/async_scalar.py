"""The `table.exec.async-scalar.*` options (Flink's ExecutionConfigOptions for async scalar functions) and the
translation of a Calc calling async scalar functions onto the async wait operator (`runtime.async_calc`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fluvial.table.errors import ValidationException

if TYPE_CHECKING:
    from fluvial.table.planner.rex import Rex

__all__ = [
    "AsyncScalarOptions",
    "async_scalar_from",
    "ASYNC_SCALAR_OPTIONS",
    "check_async_scalar_option",
    "translate_async_calc",
]

MAX_CONCURRENT = "table.exec.async-scalar.max-concurrent-operations"
TIMEOUT = "table.exec.async-scalar.timeout"
RETRY_STRATEGY = "table.exec.async-scalar.retry-strategy"
RETRY_DELAY = "table.exec.async-scalar.retry-delay"
MAX_ATTEMPTS = "table.exec.async-scalar.max-attempts"

ASYNC_SCALAR_OPTIONS = {
    MAX_CONCURRENT: "the most async scalar function calls in flight per task (default 10)",
    TIMEOUT: "how long an async scalar function call may take, retries included (default 3 min)",
    RETRY_STRATEGY: "NO_RETRY or FIXED_DELAY (default): whether a failed async scalar call is retried",
    RETRY_DELAY: "the wait before each retry of an async scalar call (default 100 ms)",
    MAX_ATTEMPTS: "the retries of a failed async scalar call after the first (default 3)",
}


@dataclass(frozen=True)
class AsyncScalarOptions:
    max_concurrent: int = 10
    timeout_ms: int = 180_000
    retry: bool = True  # FIXED_DELAY
    retry_delay_ms: int = 100
    max_attempts: int = 3

    def retry_strategy(self) -> Any:
        """The async wait operator's strategy: FIXED_DELAY retries on any exception, never on a result."""
        if not self.retry:
            return None
        from fluvial.datastream.async_retry_strategies import FixedDelayRetryStrategy

        return FixedDelayRetryStrategy(self.max_attempts, self.retry_delay_ms, None, _any_exception)


def _any_exception(error: BaseException) -> bool:
    return True


def _positive_int(key: str, value: str) -> int:
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use a whole number >= 1")
    return int(text)


def _duration(key: str, value: str) -> int:
    from fluvial.table.environment_settings import parse_duration_millis

    try:
        millis = parse_duration_millis(str(value))
    except ValidationException as error:
        raise ValidationException(f"{error} (key '{key}')") from None
    if millis <= 0:
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use a positive duration")
    return millis


def check_async_scalar_option(key: str, value: str) -> None:
    """A value's form, checked when it is set (as Flink parses a value when it is set)."""
    if key in (MAX_CONCURRENT, MAX_ATTEMPTS):
        _positive_int(key, value)
    elif key in (TIMEOUT, RETRY_DELAY):
        _duration(key, value)
    elif key == RETRY_STRATEGY and str(value).strip().upper() not in ("NO_RETRY", "FIXED_DELAY"):
        raise ValidationException(f"Could not parse value '{value}' for key '{key}': use NO_RETRY or FIXED_DELAY")


def async_scalar_from(config: Any) -> AsyncScalarOptions:
    """The job's async scalar options from a TableConfig (Flink's defaults where unset)."""
    options = AsyncScalarOptions()
    concurrent, timeout, strategy, delay, attempts = (config.get(k) for k in ASYNC_SCALAR_OPTIONS)
    return AsyncScalarOptions(
        max_concurrent=options.max_concurrent if concurrent is None else _positive_int(MAX_CONCURRENT, concurrent),
        timeout_ms=options.timeout_ms if timeout is None else _duration(TIMEOUT, timeout),
        retry=options.retry if strategy is None else str(strategy).strip().upper() == "FIXED_DELAY",
        retry_delay_ms=options.retry_delay_ms if delay is None else _duration(RETRY_DELAY, delay),
        max_attempts=options.max_attempts if attempts is None else _positive_int(MAX_ATTEMPTS, attempts),
    )


def translate_async_calc(
    stream: Any,
    names: Sequence[str],
    width: int,
    projections: Sequence[Rex] | None,
    condition: Rex | None,
    options: AsyncScalarOptions,
) -> Any:
    """A Calc calling async scalar functions over `stream` (rows `width` columns wide): an ordered async wait
    operator, at most `max_concurrent` rows in flight, with the options' timeout and retry strategy."""
    from fluvial.datastream.async_data_stream import AsyncDataStream
    from fluvial.table.runtime.async_calc import AsyncCalcFunction

    function = AsyncCalcFunction(names, width, projections, condition, options.timeout_ms)
    strategy = options.retry_strategy()
    if strategy is None:
        return AsyncDataStream.ordered_wait(stream, function, options.timeout_ms, options.max_concurrent)
    return AsyncDataStream.ordered_wait_with_retry(
        stream, function, options.timeout_ms, strategy, options.max_concurrent
    )
