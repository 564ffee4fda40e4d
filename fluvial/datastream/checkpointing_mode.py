"""CheckpointingMode (PyFlink `pyflink.datastream.checkpointing_mode`)."""

from __future__ import annotations

import enum


class CheckpointingMode(enum.Enum):
    """EXACTLY_ONCE aligns barriers (a channel that delivered barrier n waits for the others); AT_LEAST_ONCE
    forwards without blocking, so records after a barrier may be replayed after a restore."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
