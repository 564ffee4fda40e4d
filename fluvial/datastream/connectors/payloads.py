"""Deserializing a fetched batch of messages at C speed, and naming the one message that fails."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

M = TypeVar("M")


def deserialize_batch(
    deserialize: Callable[[bytes], Any],
    messages: Sequence[M],
    payload: Callable[[M], bytes],
    failure: Callable[[M, Exception], Exception],
) -> list:
    """`deserialize` each message's payload in one comprehension; when one fails, raise `failure(message, error)`
    for the first message that fails (chained to the deserializer's error), so the job names it."""
    try:
        return [deserialize(payload(message)) for message in messages]
    except Exception:  # noqa: BLE001 - find the message and name it
        for message in messages:
            try:
                deserialize(payload(message))
            except Exception as error:  # noqa: BLE001
                raise failure(message, error) from error
        raise
