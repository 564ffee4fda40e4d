"""ExecutionConfig (PyFlink `pyflink.common.ExecutionConfig`): job-wide knobs read when the job is planned."""

from __future__ import annotations

from typing import Any

from fluvial.common.errors import InvalidJobError


class ExecutionConfig:
    """Settings of a job's execution (PyFlink's `ExecutionConfig`): `env.get_config()`."""

    def __init__(self) -> None:
        self._parallelism: int | None = None
        self._max_parallelism: int | None = None
        self._auto_watermark_interval = 200
        self._object_reuse = False
        self._global_job_parameters: dict[str, str] = {}
        self._closure_cleaner = True
        self._input_dependency_constraint: Any = None

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        """Set the job's default parallelism (as `env.set_parallelism`).

        Args:
            parallelism: At least 1.

        Returns:
            This config.
        """
        if not isinstance(parallelism, int) or parallelism < 1:
            raise InvalidJobError(f"parallelism must be an integer >= 1, got {parallelism!r}")
        self._parallelism = parallelism
        return self

    def get_parallelism(self) -> int | None:
        """The job's default parallelism, or None when unset."""
        return self._parallelism

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        """Set the job's default max parallelism (as `env.set_max_parallelism`).

        Args:
            max_parallelism: Between 1 and 32768.

        Returns:
            This config.
        """
        if not isinstance(max_parallelism, int) or not 1 <= max_parallelism <= 32768:
            raise InvalidJobError(f"max parallelism must be an integer in [1, 32768], got {max_parallelism!r}")
        self._max_parallelism = max_parallelism
        return self

    def get_max_parallelism(self) -> int | None:
        """The job's default max parallelism, or None when unset."""
        return self._max_parallelism

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Set how often periodic watermarks are generated (`pipeline.auto-watermark-interval`).

        Args:
            interval: The interval in ms; 0 disables periodic watermarks.

        Returns:
            This config.
        """
        if interval < 0:
            raise InvalidJobError(f"auto watermark interval must be >= 0 ms (0 turns it off), got {interval}")
        self._auto_watermark_interval = int(interval)
        return self

    def get_auto_watermark_interval(self) -> int:
        """How often periodic watermarks are generated, in ms."""
        return self._auto_watermark_interval

    def enable_object_reuse(self) -> ExecutionConfig:
        """Flink's object-reuse switch. Chained operators here always hand the same objects along, so it changes
        nothing; kept so PyFlink programs run unchanged.

        Returns:
            This config.
        """
        self._object_reuse = True
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        """Flink's object-reuse switch (see `enable_object_reuse`).

        Returns:
            This config.
        """
        self._object_reuse = False
        return self

    def is_object_reuse_enabled(self) -> bool:
        """Whether object reuse was enabled."""
        return self._object_reuse

    def set_global_job_parameters(self, global_job_parameters_dict: dict) -> ExecutionConfig:
        """Set parameters every function can read through `get_runtime_context().get_job_parameter(key)`.

        Args:
            global_job_parameters_dict: Keys and values (strings).

        Returns:
            This config.
        """
        self._global_job_parameters = {str(k): str(v) for k, v in global_job_parameters_dict.items()}
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        """The global job parameters."""
        return dict(self._global_job_parameters)

    def enable_closure_cleaner(self) -> ExecutionConfig:
        """Flink's closure cleaner is Java's; functions here are pickled by cloudpickle whatever this says.

        Returns:
            This config.
        """
        self._closure_cleaner = True
        return self

    def disable_closure_cleaner(self) -> ExecutionConfig:
        """See `enable_closure_cleaner`.

        Returns:
            This config.
        """
        self._closure_cleaner = False
        return self

    def is_closure_cleaner_enabled(self) -> bool:
        """Whether the closure cleaner was enabled (it has no effect here)."""
        return self._closure_cleaner

    def set_default_input_dependency_constraint(self, constraint: Any) -> ExecutionConfig:
        """Deprecated in Flink and read by no scheduler; stored so the getter answers what was set."""
        from fluvial.common.input_dependency_constraint import InputDependencyConstraint

        if not isinstance(constraint, InputDependencyConstraint):
            raise InvalidJobError(f"expected InputDependencyConstraint.ANY or .ALL, got {constraint!r}")
        self._input_dependency_constraint = constraint
        return self

    def get_default_input_dependency_constraint(self) -> Any:
        """The default InputDependencyConstraint (a batch scheduling setting of Flink 1.x; ANY)."""
        from fluvial.common.input_dependency_constraint import InputDependencyConstraint

        return self._input_dependency_constraint or InputDependencyConstraint.ANY
