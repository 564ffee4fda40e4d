"""Checkpoint settings (PyFlink `pyflink.datastream.checkpoint_config`, plus the 1.x methods programs still call).

`CheckpointConfig` is the mutable object a program configures (`env.get_checkpoint_config()`); every setter
checks its value at once, so a wrong setting fails where it is written, naming the value and the fix. The
runtime never reads it: at submission `settings()` freezes it into `CheckpointSettings`, plain values the
JobMaster's CheckpointCoordinator and the tasks read.

Defaults (Flink's): checkpointing off (interval -1), exactly-once, timeout 10 min, no pause between
checkpoints, one checkpoint at a time, no tolerated failures, one retained checkpoint
(`state.checkpoints.num-retained`), storage from `state.checkpoints.dir` if set, else the JobManager's memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fluvial.common.configuration import Configuration
from fluvial.common.errors import InvalidJobError
from fluvial.common.time import Duration
from fluvial.datastream.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from fluvial.datastream.checkpointing_mode import CheckpointingMode
from fluvial.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention

__all__ = [
    "CheckpointConfig",
    "CheckpointSettings",
    "CheckpointingMode",
    "ExternalizedCheckpointCleanup",
    "ExternalizedCheckpointRetention",
]


ExternalizedCheckpointCleanup = ExternalizedCheckpointRetention
"""The 1.x name."""

MINIMAL_CHECKPOINT_TIME_MS = 10
UNLIMITED_TOLERABLE_FAILURES = 2**31 - 1


@dataclass(frozen=True, slots=True)
class CheckpointSettings:
    """What the runtime reads: every knob as a plain value (milliseconds for times). `interval_ms` is -1 (or 0)
    when checkpointing is off; `storage` is never None (the default is resolved)."""

    interval_ms: int
    mode: CheckpointingMode
    timeout_ms: int
    min_pause_ms: int
    max_concurrent: int
    tolerable_failures: int
    num_retained: int
    storage: CheckpointStorage
    externalized_retention: ExternalizedCheckpointRetention
    checkpoints_after_tasks_finish: bool = True
    """FLIP-147: checkpoints go on after some tasks finish, and a task that finished its input waits for a final
    checkpoint, through which two-phase-commit sinks commit their last output."""
    unaligned: bool = False
    """FLIP-76: barriers overtake queued buffers, which are persisted as channel state (exactly-once only)."""
    aligned_checkpoint_timeout_ms: int = 0
    """With unaligned checkpoints: a checkpoint starts aligned and turns unaligned once this old (0: at once)."""
    force_unaligned: bool = False

    @property
    def enabled(self) -> bool:
        return self.interval_ms > 0

    @property
    def exactly_once(self) -> bool:
        return self.mode is CheckpointingMode.EXACTLY_ONCE


def _millis(value: int | Duration, what: str) -> int:
    if isinstance(value, Duration):
        return value.millis
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidJobError(f"{what} must be an integer number of milliseconds or a Duration, got {value!r}")
    return value


def _count(value: int, what: str, minimum: int, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidJobError(f"{what} must be an integer >= {minimum}, got {value!r}; {fix}")
    return value


class CheckpointConfig:
    """Everything about checkpointing one job. Setters return self, as PyFlink's do."""

    DEFAULT_MODE = CheckpointingMode.EXACTLY_ONCE
    DEFAULT_TIMEOUT = 10 * 60 * 1000
    DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS = 0
    DEFAULT_MAX_CONCURRENT_CHECKPOINTS = 1

    def __init__(self, configuration: Configuration | None = None) -> None:
        """`configuration` supplies Flink's keys (see `configure`); setters called later win."""
        self._interval = -1
        self._mode = self.DEFAULT_MODE
        self._timeout = self.DEFAULT_TIMEOUT
        self._min_pause = self.DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS
        self._max_concurrent = self.DEFAULT_MAX_CONCURRENT_CHECKPOINTS
        self._tolerable_failures = 0
        self._num_retained = 1
        self._storage: CheckpointStorage | None = None
        self._retention = ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
        self._aligned_checkpoint_timeout = Duration(0)
        self._unaligned = False
        self._force_unaligned = False
        self._checkpoints_after_tasks_finish = True  # FLIP-147: a final checkpoint after tasks finish
        if configuration is not None:
            self.configure(configuration)

    def configure(self, configuration: Configuration) -> CheckpointConfig:
        """Apply the checkpointing keys `configuration` sets (`execution.checkpointing.interval`, `.mode`,
        `.timeout`, `.min-pause`, `.max-concurrent-checkpoints`, `.tolerable-failed-checkpoints`,
        `state.checkpoints.dir`, `state.checkpoints.num-retained`, `.checkpoints-after-tasks-finish`), each through
        its setter; keys it does not
        set keep their values (Flink's `CheckpointConfig.configure`)."""
        keys = configuration.key_set()

        def apply(key: str, setter: Callable[[Any], Any]) -> None:
            if key in keys:
                setter(configuration.get(key))

        apply("execution.checkpointing.interval", self.set_checkpoint_interval)
        apply("state.checkpoints.dir", lambda directory: directory and self.set_checkpoint_storage_dir(directory))
        apply("state.checkpoints.num-retained", self.set_num_retained)
        apply(
            "execution.checkpointing.mode",
            lambda mode: self.set_checkpointing_mode(
                CheckpointingMode.AT_LEAST_ONCE if mode == "at_least_once" else CheckpointingMode.EXACTLY_ONCE
            ),
        )
        apply(
            "execution.checkpointing.externalized-checkpoint-retention",
            lambda mode: self.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention[mode.upper()]),
        )
        apply("execution.checkpointing.timeout", self.set_checkpoint_timeout)
        apply("execution.checkpointing.min-pause", self.set_min_pause_between_checkpoints)
        apply("execution.checkpointing.max-concurrent-checkpoints", self.set_max_concurrent_checkpoints)
        apply("execution.checkpointing.tolerable-failed-checkpoints", self.set_tolerable_checkpoint_failure_number)
        for key in ("execution.checkpointing.unaligned.enabled", "execution.checkpointing.unaligned"):
            if key in keys:  # Flink 2's key, then its 1.x name
                self.enable_unaligned_checkpoints(bool(configuration.get(key)))
                break
        apply("execution.checkpointing.unaligned.forced", self.set_force_unaligned_checkpoints)
        for key in ("execution.checkpointing.aligned-checkpoint-timeout", "execution.checkpointing.alignment-timeout"):
            if key in keys:
                self.set_aligned_checkpoint_timeout(Duration.of_millis(configuration.get(key)))
                break
        # Flink 2's key, then its older name (which Flink still reads)
        for key in (
            "execution.checkpointing.checkpoints-after-tasks-finish",
            "execution.checkpointing.checkpoints-after-tasks-finish.enabled",
        ):
            if key in keys:
                self._checkpoints_after_tasks_finish = bool(configuration.get(key))
                break
        return self

    # -- interval and mode --------------------------------------------------------------------------------------

    def is_checkpointing_enabled(self) -> bool:
        """Whether the job takes checkpoints (an interval is set)."""
        return self._interval > 0

    def set_checkpoint_interval(self, checkpoint_interval: int | Duration) -> CheckpointConfig:
        """Milliseconds between checkpoint triggers; 0 or -1 turns checkpointing off."""
        interval = _millis(checkpoint_interval, "the checkpoint interval")
        if interval not in (0, -1) and interval < MINIMAL_CHECKPOINT_TIME_MS:
            raise InvalidJobError(
                f"checkpoint interval {interval} ms is too short: it must be at least {MINIMAL_CHECKPOINT_TIME_MS} "
                "ms (use e.g. env.enable_checkpointing(1000)), or 0/-1 to turn checkpointing off"
            )
        self._interval = interval
        return self

    def get_checkpoint_interval(self) -> int:
        """The checkpoint interval in ms, or -1 when checkpointing is disabled."""
        return self._interval

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        """Set the checkpointing guarantee.

        Args:
            checkpointing_mode: `CheckpointingMode.EXACTLY_ONCE` or `AT_LEAST_ONCE`.

        Returns:
            This config.
        """
        if not isinstance(checkpointing_mode, CheckpointingMode):
            raise InvalidJobError(
                f"checkpointing mode must be CheckpointingMode.EXACTLY_ONCE or CheckpointingMode.AT_LEAST_ONCE, "
                f"got {checkpointing_mode!r}"
            )
        self._mode = checkpointing_mode
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """EXACTLY_ONCE (aligned barriers) or AT_LEAST_ONCE."""
        return self._mode

    # -- pacing and failures ------------------------------------------------------------------------------------

    def set_checkpoint_timeout(self, checkpoint_timeout: int | Duration) -> CheckpointConfig:
        """A checkpoint not acknowledged by every task within this many milliseconds is aborted (TIMEOUT)."""
        timeout = _millis(checkpoint_timeout, "the checkpoint timeout")
        if timeout < MINIMAL_CHECKPOINT_TIME_MS:
            raise InvalidJobError(
                f"checkpoint timeout {timeout} ms is too short: it must be at least {MINIMAL_CHECKPOINT_TIME_MS} ms "
                f"(the default is {self.DEFAULT_TIMEOUT} ms)"
            )
        self._timeout = timeout
        return self

    def get_checkpoint_timeout(self) -> int:
        """How long a checkpoint may take before it is abandoned, in ms."""
        return self._timeout

    def set_min_pause_between_checkpoints(self, min_pause_between_checkpoints: int | Duration) -> CheckpointConfig:
        """Milliseconds from the end of one checkpoint to the trigger of the next (0: none)."""
        pause = _millis(min_pause_between_checkpoints, "the minimum pause between checkpoints")
        self._min_pause = _count(pause, "the minimum pause between checkpoints (ms)", 0, "use 0 for no pause")
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        """The least time between the end of one checkpoint and the start of the next, in ms."""
        return self._min_pause

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        """Set how many checkpoints may be in flight at once.

        Args:
            max_concurrent_checkpoints: At least 1.

        Returns:
            This config.
        """
        self._max_concurrent = _count(
            max_concurrent_checkpoints, "the maximum of concurrent checkpoints", 1, "the default is 1"
        )
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        """How many checkpoints may be in flight at once."""
        return self._max_concurrent

    def set_tolerable_checkpoint_failure_number(self, tolerable_checkpoint_failure_number: int) -> CheckpointConfig:
        """Consecutive checkpoint failures tolerated before the job fails over (0: the first one fails it)."""
        self._tolerable_failures = _count(
            tolerable_checkpoint_failure_number,
            "the tolerable checkpoint failure number",
            0,
            "use 0 to fail the job on the first checkpoint failure",
        )
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        """How many consecutive failed checkpoints the job tolerates before it fails over."""
        return self._tolerable_failures

    def set_fail_on_checkpointing_errors(self, fail_on_checkpointing_errors: bool) -> CheckpointConfig:
        """Deprecated in PyFlink 2.0: True tolerates no failure, False tolerates any number."""
        self._tolerable_failures = 0 if fail_on_checkpointing_errors else UNLIMITED_TOLERABLE_FAILURES
        return self

    def is_fail_on_checkpointing_errors(self) -> bool:
        """Whether one failed checkpoint fails the job (no failures are tolerated)."""
        return self._tolerable_failures == 0

    def set_num_retained(self, num_retained: int) -> CheckpointConfig:
        """How many completed checkpoints are kept (fluvial's setter for `state.checkpoints.num-retained`)."""
        self._num_retained = _count(num_retained, "the number of retained checkpoints", 1, "the default is 1")
        return self

    def get_num_retained(self) -> int:
        """How many completed checkpoints are kept."""
        return self._num_retained

    # -- storage ------------------------------------------------------------------------------------------------

    def set_checkpoint_storage(self, storage: CheckpointStorage | str) -> CheckpointConfig:
        """A CheckpointStorage description, or a path/URL (shorthand for FileSystemCheckpointStorage)."""
        if isinstance(storage, str):
            storage = FileSystemCheckpointStorage(storage)
        if not isinstance(storage, CheckpointStorage):
            raise InvalidJobError(
                f"checkpoint storage must be JobManagerCheckpointStorage(...) or FileSystemCheckpointStorage(...) "
                f"(from fluvial.datastream.checkpoint_storage), got {type(storage).__name__}"
            )
        self._storage = storage
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        """The 1.x shorthand: checkpoints go to files under `checkpoint_path`."""
        self._storage = FileSystemCheckpointStorage(checkpoint_path)
        return self

    def get_checkpoint_storage(self) -> CheckpointStorage | None:
        """The storage set on this config (or by `state.checkpoints.dir`); None means the JobManager default."""
        return self._storage

    # -- externalized checkpoints -------------------------------------------------------------------------------

    def set_externalized_checkpoint_retention(
        self, retention_mode: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        """What happens to the job's retained checkpoints when it ends (Flink's CheckpointRetentionPolicy;
        savepoints are never deleted): NO_EXTERNALIZED_CHECKPOINTS (the default) deletes them however the job
        ends; DELETE_ON_CANCELLATION keeps those of a failed job; RETAIN_ON_CANCELLATION keeps those of a
        cancelled or failed job for a later restore (`fluvial run -s`). A finished job's are deleted in every
        mode."""
        if not isinstance(retention_mode, ExternalizedCheckpointRetention):
            raise InvalidJobError(
                f"retention must be an ExternalizedCheckpointRetention (DELETE_ON_CANCELLATION, "
                f"RETAIN_ON_CANCELLATION or NO_EXTERNALIZED_CHECKPOINTS), got {retention_mode!r}"
            )
        self._retention = retention_mode
        return self

    def enable_externalized_checkpoints(self, cleanup_mode: ExternalizedCheckpointRetention) -> CheckpointConfig:
        """The 1.x name of `set_externalized_checkpoint_retention`."""
        return self.set_externalized_checkpoint_retention(cleanup_mode)

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        """What happens to retained checkpoints when the job ends (NO_EXTERNALIZED_CHECKPOINTS unless set)."""
        return self._retention

    def get_externalized_checkpoint_cleanup(self) -> ExternalizedCheckpointRetention | None:
        """The 1.x getter: None when checkpoints are not externalized."""
        retention = self._retention
        return None if retention is ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS else retention

    def is_externalized_checkpoints_enabled(self) -> bool:
        """Whether retained checkpoints outlive the job."""
        return self._retention is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS

    # -- unaligned checkpoints (FLIP-76) -------------------------------------------------------------------------

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        """Barriers overtake the buffers queued in a task's input channels; those buffers are persisted with the
        task's state and replayed on restore, so checkpoints stay short under back pressure. Exactly-once only;
        savepoints stay aligned."""
        self._unaligned = bool(enabled)
        return self

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        """Checkpoints align their barriers again (the default): every barrier waits behind the buffers queued
        before it. Returns this config, for chaining."""
        return self.enable_unaligned_checkpoints(False)

    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether checkpoints are unaligned (`execution.checkpointing.unaligned.enabled`)."""
        return self._unaligned

    def set_force_unaligned_checkpoints(self, force_unaligned_checkpoints: bool = True) -> CheckpointConfig:
        """Flink's forced mode allows unaligned checkpoints where they would otherwise be refused (iterative
        jobs, which fluvial does not have): here it turns unaligned checkpoints on, as enabling them does."""
        self._force_unaligned = bool(force_unaligned_checkpoints)
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether the forced mode of unaligned checkpoints is on (`execution.checkpointing.unaligned.forced`)."""
        return self._force_unaligned

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Duration | int) -> CheckpointConfig:
        """With unaligned checkpoints: each checkpoint starts aligned and turns unaligned once it is older than
        this (0, the default: unaligned from the start)."""
        if isinstance(alignment_timeout, int) and not isinstance(alignment_timeout, bool):
            alignment_timeout = Duration.of_millis(alignment_timeout)
        if not isinstance(alignment_timeout, Duration) or alignment_timeout.millis < 0:
            raise InvalidJobError(
                f"the aligned checkpoint timeout must be a Duration >= 0 (e.g. "
                f"Duration.of_seconds(1)), got {alignment_timeout!r}"
            )
        self._aligned_checkpoint_timeout = alignment_timeout
        return self

    def get_aligned_checkpoint_timeout(self) -> Duration:
        """How long a checkpoint stays aligned before it turns unaligned
        (`execution.checkpointing.aligned-checkpoint-timeout`; 0: unaligned from the start)."""
        return self._aligned_checkpoint_timeout

    set_alignment_timeout = set_aligned_checkpoint_timeout
    get_alignment_timeout = get_aligned_checkpoint_timeout

    # -- what the runtime reads ---------------------------------------------------------------------------------

    def settings(self) -> CheckpointSettings:
        """A frozen copy of every setting, with the default storage resolved."""
        return CheckpointSettings(
            interval_ms=self._interval,
            mode=self._mode,
            timeout_ms=self._timeout,
            min_pause_ms=self._min_pause,
            max_concurrent=self._max_concurrent,
            tolerable_failures=self._tolerable_failures,
            num_retained=self._num_retained,
            storage=self._storage if self._storage is not None else JobManagerCheckpointStorage(),
            externalized_retention=self._retention,
            checkpoints_after_tasks_finish=self._checkpoints_after_tasks_finish,
            unaligned=self._unaligned_checked(),
            aligned_checkpoint_timeout_ms=self._aligned_checkpoint_timeout.millis,
            force_unaligned=self._force_unaligned,
        )

    def _unaligned_checked(self) -> bool:
        unaligned = self._unaligned or self._force_unaligned
        if unaligned and self._mode is not CheckpointingMode.EXACTLY_ONCE:
            raise InvalidJobError(
                "unaligned checkpoints need CheckpointingMode.EXACTLY_ONCE (at-least-once never aligns, so there is "
                "nothing to overtake): set the mode to EXACTLY_ONCE, or turn unaligned checkpoints off"
            )
        return unaligned
