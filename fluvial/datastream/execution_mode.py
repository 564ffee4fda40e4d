"""RuntimeExecutionMode (PyFlink `pyflink.datastream.execution_mode`), set with `env.set_runtime_mode(...)` or
the `execution.runtime-mode` key.

STREAMING runs every job as a stream. BATCH (and AUTOMATIC when every source is bounded) asks for Flink's
batch semantics — one final result per key, event-time windows firing at end of input, no checkpoints —
which the runtime does not have yet: such a job fails at submission with NotYetSupportedError rather than
running with streaming semantics under a batch label.
"""

from __future__ import annotations

import enum


class RuntimeExecutionMode(enum.Enum):
    """How a job runs (PyFlink's `RuntimeExecutionMode`): STREAMING, BATCH (bounded input, final results
    only, no checkpoints) or AUTOMATIC (BATCH when every source is bounded).
    """

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2

    @property
    def config_value(self) -> str:
        """The value of `execution.runtime-mode` (Flink writes the names in upper case)."""
        return self.name

    @staticmethod
    def from_config_value(raw: str) -> RuntimeExecutionMode:
        """The mode named by `execution.runtime-mode`'s value.

        Args:
            raw: `STREAMING`, `BATCH` or `AUTOMATIC` (any case).

        Returns:
            The mode.

        Raises:
            ValueError: another value.
        """
        try:
            return RuntimeExecutionMode[raw.strip().upper()]
        except KeyError:
            raise ValueError("expected STREAMING, BATCH or AUTOMATIC") from None
