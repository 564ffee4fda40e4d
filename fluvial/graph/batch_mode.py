"""BATCH execution mode as a plan-to-plan step: what the compiler changes in each operator description of a job
that runs with `RuntimeExecutionMode.BATCH` (or AUTOMATIC over bounded sources), following Flink's batch
semantics for the DataStream API:

1. Watermark generators are ignored; timestamp assigners still run. The only watermark is the final one at end
   of input, so every event-time window fires then, and nothing is ever late.
2. Keyed reduces (and `sum`/`min`/`max`/..., which compile to them) are not rolling: each key's final result
   is emitted once, at end of input, stamped with the end of time (Flink's BatchGroupedReduceOperator).
3. Timers of either clock fire at end of input: processing time does not advance during a batch job and jumps
   to the end of time when the input ends.
4. Broadcast inputs are processed before the data side of a broadcast process function.
5. There are no checkpoints (the environment drops the checkpoint settings and says so).

Every operator description gets `batch=True`; the runtime operators read it for 2 to 4. Pure functions over
frozen descriptions: nothing here runs a job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from fluvial.common.watermark_strategy import NoWatermarksGenerator, WatermarkGenerator
from fluvial.datastream import transformations as t


@dataclasses.dataclass(frozen=True)
class BatchTimestamps:
    """A watermark strategy as BATCH mode runs it: the user's timestamp assigner, no watermark generator (rule
    1). Quacks like a WatermarkStrategy for the source and `assign_timestamps_and_watermarks` runtimes."""

    strategy: Any
    idle_timeout_ms: None = None  # idleness means nothing when no watermark is generated

    def create_watermark_generator(self, context: Any = None) -> WatermarkGenerator:
        return NoWatermarksGenerator()

    def create_timestamp_assigner(self) -> Callable[[Any, int | None], Any] | None:
        return self.strategy.create_timestamp_assigner()


def for_batch(spec: t.OperatorSpec) -> t.OperatorSpec:
    """The description `spec` becomes in a BATCH job (see the module docstring)."""
    changes: dict[str, Any] = {"batch": True}
    if isinstance(spec, t.SourceSpec) and spec.watermark_strategy is not None:
        changes["watermark_strategy"] = BatchTimestamps(spec.watermark_strategy)
    elif isinstance(spec, t.TimestampsAndWatermarksSpec):
        changes["function"] = BatchTimestamps(spec.function)
    return dataclasses.replace(spec, **changes)
