"""Ready-made predicates for async retry strategies (PyFlink `pyflink.datastream.async_retry_predicates`)."""

from __future__ import annotations

from typing import Any


def empty_result_predicate(result: list | None) -> bool:
    """Retry when the call returned nothing."""
    return result is None or len(result) == 0


def has_exception_predicate(error: BaseException | None) -> bool:
    """Retry on any exception."""
    return error is not None


def exception_type_predicate(error: BaseException | None, expected_error_type: Any) -> bool:
    """Retry on exceptions of one type (bind it: `functools.partial(exception_type_predicate,
    expected_error_type=IOError)`)."""
    return isinstance(error, expected_error_type)
