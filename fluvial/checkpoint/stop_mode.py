"""How a stop-with-savepoint ends a job (Flink's StopMode, carried by SavepointType.suspend()/terminate()).

Its savepoint is synchronous: every subtask processes nothing after its snapshot for it — no record, timer
or mail — until the savepoint completes (the subtask is told, so two-phase-commit sinks commit it, and then
ends) or is aborted (the subtask resumes where it was and the job keeps running)."""

from __future__ import annotations

import enum


class StopMode(enum.Enum):
    NO_DRAIN = "no-drain"  # `flink stop`: no end of input, no final watermark; restoring continues the stream
    DRAIN = "drain"  # `flink stop --drain`: MAX_WATERMARK and end of input (operators finish) before the barrier

    @classmethod
    def of(cls, drain: bool) -> StopMode:
        return cls.DRAIN if drain else cls.NO_DRAIN
