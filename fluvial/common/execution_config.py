"""ExecutionConfig (PyFlink `pyflink.common.ExecutionConfig`): job-wide knobs read when the job is planned."""

from __future__ import annotations

from typing import Any

from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError, InvalidJobError


class ExecutionConfig:
    """Settings of a job's execution (PyFlink's `ExecutionConfig`): `env.get_config()`. The settings Flink 2
    keeps as configuration keys (task cancellation) are read from and written to the environment's
    Configuration, as Flink's ExecutionConfig wraps its Configuration."""

    def __init__(self, configuration: Configuration | None = None) -> None:
        self._configuration = configuration if configuration is not None else Configuration()
        self._force_kryo = False
        self._force_avro = False
        self._generic_types = True
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

    def set_task_cancellation_interval(self, interval: int) -> ExecutionConfig:
        """Set the time between interrupts of a task that does not cancel (`task.cancellation.interval`).

        Args:
            interval: Milliseconds.

        Returns:
            This config.
        """
        self._configuration.set_string("task.cancellation.interval", f"{_milliseconds(interval, 'interval')} ms")
        return self

    def get_task_cancellation_interval(self) -> int:
        """The time between interrupts of a task that does not cancel, in ms."""
        return int(self._configuration.get("task.cancellation.interval"))

    def set_task_cancellation_timeout(self, timeout: int) -> ExecutionConfig:
        """Set the time after which a task that does not cancel is given up (`task.cancellation.timeout`).

        Args:
            timeout: Milliseconds; 0 never gives up.

        Returns:
            This config.
        """
        self._configuration.set_string("task.cancellation.timeout", f"{_milliseconds(timeout, 'timeout')} ms")
        return self

    def get_task_cancellation_timeout(self) -> int:
        """The time after which a task that does not cancel is given up, in ms (0: never)."""
        return int(self._configuration.get("task.cancellation.timeout"))

    def set_latency_tracking_interval(self, interval: int) -> ExecutionConfig:
        """Flink's latency markers (`metrics.latency.interval`): fluvial emits none, so only 0 or less (off,
        Flink's default) is accepted.

        Args:
            interval: Milliseconds; 0 or less turns latency tracking off.

        Returns:
            This config.

        Raises:
            ConfigurationError: a positive interval, which asks for markers fluvial does not emit.
        """
        if interval > 0:
            raise ConfigurationError(
                f"latency tracking interval {interval} ms: fluvial emits no latency markers; remove the call (the "
                "dashboard's per-operator busy and back-pressure times show where records wait)"
            )
        return self

    def get_latency_tracking_interval(self) -> int:
        """The latency-marker interval in ms: 0 (off; fluvial emits none)."""
        return 0

    def enable_force_kryo(self) -> ExecutionConfig:
        """Flink's switch to serialize POJOs with Kryo. There is no Kryo here (records are pickled or converted
        by their declared type), so it changes nothing; recorded so the getter answers what was set.

        Returns:
            This config.
        """
        self._force_kryo = True
        return self

    def disable_force_kryo(self) -> ExecutionConfig:
        """See `enable_force_kryo`.

        Returns:
            This config.
        """
        self._force_kryo = False
        return self

    def is_force_kryo_enabled(self) -> bool:
        """Whether `enable_force_kryo` was called last (it has no effect here)."""
        return self._force_kryo

    def enable_force_avro(self) -> ExecutionConfig:
        """Flink's switch to serialize POJOs with Avro's reflect serializer; like `enable_force_kryo`, a
        setting of the JVM's serializers that changes nothing here.

        Returns:
            This config.
        """
        self._force_avro = True
        return self

    def disable_force_avro(self) -> ExecutionConfig:
        """See `enable_force_avro`.

        Returns:
            This config.
        """
        self._force_avro = False
        return self

    def is_force_avro_enabled(self) -> bool:
        """Whether `enable_force_avro` was called last (it has no effect here)."""
        return self._force_avro

    def enable_generic_types(self) -> ExecutionConfig:
        """Flink's switch allowing Java types that fall back to Kryo (GenericTypeInfo); a setting of the JVM's
        type extraction that changes nothing here (the default: allowed).

        Returns:
            This config.
        """
        self._generic_types = True
        return self

    def disable_generic_types(self) -> ExecutionConfig:
        """See `enable_generic_types`: Python records are never Java generic types.

        Returns:
            This config.
        """
        self._generic_types = False
        return self

    def has_generic_types_disabled(self) -> bool:
        """Whether `disable_generic_types` was called last (it has no effect here)."""
        return not self._generic_types

    def enable_auto_generated_uids(self) -> ExecutionConfig:
        """Operators without a `uid()` get one generated from the job's shape (the default, and what fluvial
        always does).

        Returns:
            This config.
        """
        return self

    def disable_auto_generated_uids(self) -> ExecutionConfig:
        """Flink's check that every operator has a `uid()`; not in fluvial yet.

        Raises:
            ConfigurationError: always, naming the workaround.
        """
        raise ConfigurationError(
            "disable_auto_generated_uids (pipeline.auto-generate-uids: false) is not supported by fluvial yet: "
            "give each stateful operator a uid() yourself, and remove the call"
        )

    def has_auto_generated_uids_enabled(self) -> bool:
        """True: operators without a `uid()` get a generated one."""
        return True

    def get_default_kryo_serializer_classes(self) -> dict[str, str]:
        """Kryo's default serializers by class: none (there is no Kryo here)."""
        return {}

    def get_registered_kryo_types(self) -> list[str]:
        """The types registered with Kryo: none (there is no Kryo here)."""
        return []

    def get_registered_pojo_types(self) -> list[str]:
        """The types registered as POJOs: none (there are no Java POJOs here)."""
        return []

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> ExecutionConfig:
        """Flink's compression of keyed-state snapshots (`execution.checkpointing.snapshot-compression`): not in
        fluvial yet, so only False (Flink's default) is accepted.

        Args:
            use_snapshot_compression: False.

        Returns:
            This config.

        Raises:
            ConfigurationError: True, which asks for compression fluvial does not apply.
        """
        if use_snapshot_compression:
            raise ConfigurationError(
                "snapshot compression is not supported by fluvial yet: remove set_use_snapshot_compression(True)"
            )
        return self

    def is_use_snapshot_compression(self) -> bool:
        """False: snapshots are written uncompressed."""
        return False


def _milliseconds(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"task cancellation {name} must be a whole number of ms >= 0, got {value!r}")
    return value
