"""What the Kafka integration tests share besides fixtures."""

from __future__ import annotations


def messages(error: BaseException | None) -> str:
    """An error's message and those of its causes, joined: what a user reads in the job's failure."""
    parts = []
    while error is not None:
        parts.append(str(error))
        error = error.__cause__ or error.__context__
    return " | ".join(parts)
