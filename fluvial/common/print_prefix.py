"""The prefix Flink's print sink puts before each line. Its own module: every printing job needs it, while the
typed-value formatting of `print_format` (dates, decimals, rows) loads only for typed streams."""

from __future__ import annotations


def print_prefix(subtask_index: int, parallelism: int, sink_identifier: str | None = None) -> str:
    """Flink's prefix for a printed line: `""`, `"3> "`, `"id> "` or `"id:3> "`."""
    prefix = sink_identifier or ""
    if parallelism > 1:
        prefix = f"{prefix}:{subtask_index + 1}" if prefix else str(subtask_index + 1)
    return f"{prefix}> " if prefix else ""
