"""StreamExecutionEnvironment (PyFlink's): the registry of a job's transformations and the door to running it.

Repeated `execute()` runs only the sinks added since the previous one, as in Flink. `execute()` packs the job
into a Pipeline and hands it to the PipelineExecutor that `execution.target` names; it imports neither the
compiler (`fluvial.graph`) nor a cluster. `get_stream_graph()` / `get_job_graph()` compile on request, to show
a plan (DESIGN section 3), through the executors' own compile step (`fluvial.cluster.compile`), imported inside
the function that asks as `execute()` imports its executor.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from fluvial.common.configuration import Configuration, check_buffer_timeout
from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.execution_config import ExecutionConfig
from fluvial.datastream import transformations as t
from fluvial.datastream.data_stream import DataStream

logger = logging.getLogger(__name__)

# Every submission passes through this hook when set: `interceptor(pipeline, submit)` either calls
# `submit(pipeline)` (returning its JobClient) or raises. The CLI uses it to count jobs (`run`) and to
# capture a plan without running it (`plan`).
execution_interceptor: contextvars.ContextVar[Callable[[Any, Callable[[Any], Any]], Any] | None] = (
    contextvars.ContextVar("execution_interceptor", default=None)
)

# Called with the JobExecutionResult of each job `execute()` ran to its end, attached, before `execute()` returns:
# `fluvial run` prints Flink's "Job Runtime: N ms" there, between the job's end and the program's next line.
execution_listener: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "execution_listener", default=None
)

# The configuration a launcher gives every environment the job creates (Flink's context environment): `fluvial run
# -p 4 -D key=value -s PATH` sets it. An environment starts from it; the job's own Configuration, passed to
# `get_execution_environment(config)` or `configure(config)`, and its setters override it, as in Flink.
context_configuration: contextvars.ContextVar[Configuration | None] = contextvars.ContextVar(
    "context_configuration", default=None
)


SESSION_CLUSTER_PARALLELISM = 1  # parallelism.default of a session cluster (Flink's flink-conf.yaml default)


class StreamExecutionEnvironment:
    """The context a job is built in and run from (PyFlink's `StreamExecutionEnvironment`).

    Sources made on it start a dataflow; operators applied to their streams record transformations, and
    nothing runs until `execute()`, `execute_async()` or `DataStream.execute_and_collect()`. Its settings
    (parallelism, checkpointing, state backend, restart strategy, configuration keys) apply to the job it runs.

    Example:
        ```python
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1, 2, 3]).map(lambda x: x + 1).print()
        env.execute("add one")
        ```
    """

    _default_local_parallelism: int | None = None  # Flink's static default for local environments

    def __init__(self, configuration: Configuration | None = None) -> None:
        self._configuration = Configuration()
        self._config = ExecutionConfig(self._configuration)
        self._chaining_enabled = True
        self._buffer_timeout = 100  # Flink's default; kept for get_buffer_timeout (batches never wait for it)
        self._slot_sharing_groups: dict[str, Any] = {}
        self._checkpoint_config: Any = None
        self._state_backend: Any = None
        self._restart_strategy: Any = None
        self._transformations: dict[int, t.Transformation] = {}
        self._pending_sinks: list[int] = []
        self._next_id = 1
        for layer in (context_configuration.get(), configuration):
            if layer is not None:
                self.configure(layer)

    @staticmethod
    def get_execution_environment(configuration: Configuration | None = None) -> StreamExecutionEnvironment:
        """Create an environment, configured by `configuration` and by `fluvial run`'s options.

        Args:
            configuration: Configuration keys for the job (see the configuration reference); they win over
                `fluvial run -p/-D`, as in Flink.

        Returns:
            A new StreamExecutionEnvironment.

        Raises:
            ConfigurationError: a key is unknown or refused, or a value is malformed.
        """
        return StreamExecutionEnvironment(configuration)

    # -- job-wide settings --------------------------------------------------------------------------------------

    def get_config(self) -> ExecutionConfig:
        """The job's ExecutionConfig (auto-watermark interval, max parallelism, latency settings)."""
        return self._config

    def get_configuration(self) -> Configuration:
        """The environment's Configuration: the keys it was created with and those set since.

        User keys outside the engine's namespaces (`my-app.threshold`) are kept for the job's code to read.
        """
        return self._configuration

    def configure(self, configuration: Configuration) -> None:
        """Take every key `configuration` sets; the job-wide ones among them (parallelism, max parallelism,
        watermark interval, chaining) apply at once, overriding earlier settings, as Flink's `configure` does.
        Keys it does not set keep their values."""
        configuration.validate()
        self._configuration.add_all(configuration)
        keys = configuration.key_set()
        if "parallelism.default" in keys:
            self._config.set_parallelism(configuration.get("parallelism.default"))
        if "pipeline.max-parallelism" in keys:
            self._config.set_max_parallelism(configuration.get("pipeline.max-parallelism"))
        if "pipeline.auto-watermark-interval" in keys:
            self._config.set_auto_watermark_interval(configuration.get("pipeline.auto-watermark-interval"))
        if "pipeline.operator-chaining.enabled" in keys:
            self._chaining_enabled = bool(configuration.get("pipeline.operator-chaining.enabled"))
        if "execution.buffer-timeout" in keys:
            self._buffer_timeout = check_buffer_timeout(int(configuration.get("execution.buffer-timeout")))
        if self._checkpoint_config is not None:
            self._checkpoint_config.configure(configuration)

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        """Set the default parallelism of the job's operators (`parallelism.default`).

        Args:
            parallelism: Subtasks per operator, at least 1. Operators may override it with their own
                `set_parallelism`.

        Returns:
            This environment.

        Raises:
            InvalidJobError: `parallelism` is not an integer >= 1.
        """
        self._config.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        """The job's default parallelism: set here, by `parallelism.default` (`-p`), else 1 on a session cluster
        (its `parallelism.default`, as in Flink's, so one job does not take every slot) and the number of cores
        in a local one."""
        explicit = self._config.get_parallelism()
        if explicit:
            return explicit
        if self._configuration.get("execution.target") == "remote":
            return SESSION_CLUSTER_PARALLELISM
        return self.get_default_local_parallelism()

    @staticmethod
    def get_default_local_parallelism() -> int:
        """The parallelism of jobs that set none: the number of cores, unless set for this process."""
        return StreamExecutionEnvironment._default_local_parallelism or os.cpu_count() or 1

    @staticmethod
    def set_default_local_parallelism(parallelism: int) -> None:
        """Set the parallelism every local environment created afterwards defaults to (Flink's static default).

        Args:
            parallelism: An integer >= 1.

        Raises:
            InvalidJobError: `parallelism` is not an integer >= 1.
        """
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise InvalidJobError(f"the default local parallelism must be an integer >= 1, got {parallelism!r}")
        StreamExecutionEnvironment._default_local_parallelism = parallelism

    def set_runtime_mode(self, execution_mode: Any) -> StreamExecutionEnvironment:
        """STREAMING, BATCH or AUTOMATIC (`execution.runtime-mode`); see `execution_mode` for what runs."""
        from fluvial.datastream.execution_mode import RuntimeExecutionMode

        if not isinstance(execution_mode, RuntimeExecutionMode):
            raise InvalidJobError(
                f"set_runtime_mode takes RuntimeExecutionMode.STREAMING, BATCH or AUTOMATIC, got {execution_mode!r}"
            )
        self._configuration.set_string("execution.runtime-mode", execution_mode.config_value)
        return self

    def get_runtime_mode(self) -> Any:
        """The RuntimeExecutionMode the job runs in: STREAMING (the default), BATCH or AUTOMATIC."""
        from fluvial.datastream.execution_mode import RuntimeExecutionMode

        return RuntimeExecutionMode.from_config_value(self._configuration.get("execution.runtime-mode"))

    def register_slot_sharing_group(self, slot_sharing_group: Any) -> StreamExecutionEnvironment:
        """Declare a group's resources once; operators then join it by name (`slot_sharing_group("name")`)."""
        from fluvial.datastream.slot_sharing_group import SlotSharingGroup

        if not isinstance(slot_sharing_group, SlotSharingGroup):
            raise InvalidJobError(f"register_slot_sharing_group takes a SlotSharingGroup, got {slot_sharing_group!r}")
        self._slot_sharing_groups[slot_sharing_group.get_name()] = slot_sharing_group
        return self

    def get_slot_sharing_group(self, name: str) -> Any:
        """The SlotSharingGroup registered (or passed to an operator) under `name`, or None."""
        return self._slot_sharing_groups.get(name)

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        """Set the default max parallelism: the number of key groups keyed state is split into, and the upper
        bound of a restore's parallelism. It cannot change between a checkpoint and its restore.

        Args:
            max_parallelism: Between 1 and 32768.

        Returns:
            This environment.
        """
        self._config.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int | None:
        """The default max parallelism set on this environment, or None when each operator derives its own
        (Flink's rule: 128 or more, from its parallelism).
        """
        return self._config.get_max_parallelism()

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        """Run every operator as a task of its own instead of chaining neighbours into one task
        (`pipeline.operator-chaining.enabled: false`); `fluvial plan` shows the effect.

        Returns:
            This environment.
        """
        self._chaining_enabled = False
        return self

    def is_chaining_enabled(self) -> bool:
        """Whether operators are chained (True unless `disable_operator_chaining` was called or the key is false)."""
        return self._chaining_enabled

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        """Chaining never looks at max parallelism here (DESIGN 2.1), so such operators may chain."""
        return True

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        """Any bound >= 0 holds: batches go to their channels as soon as they are produced; -1 is refused."""
        self._buffer_timeout = check_buffer_timeout(timeout_millis)
        return self

    def get_buffer_timeout(self) -> int:
        """The longest a record waits in a partly filled buffer, in ms (`execution.buffer-timeout`). fluvial sends
        batches as soon as they are made, so every value is met.
        """
        return self._buffer_timeout

    # -- Python dependencies (PyFlink's keys python.files, python.requirements, python.archives, ...) ----------

    def add_python_file(self, file_path: str) -> None:
        """Put a Python file or directory on the `sys.path` of the job's TaskManagers (`python.files`).

        Args:
            file_path: A `.py` file, a package directory, or a directory of modules.

        Raises:
            NotYetSupportedError: at submission, on Ray (ship code with `ray.working-dir` instead).
        """
        from fluvial.datastream import python_dependencies

        python_dependencies.add_file(self._configuration, file_path)

    def set_python_requirements(self, requirements_file_path: str, requirements_cache_dir: str | None = None) -> None:
        """Install these requirements for the job's TaskManagers (`python.requirements`): before the job's code
        loads, pip installs the file once into a directory keyed by its content (`python.requirements.install-dir`,
        default `~/.cache/fluvial/python-requirements`), reused by every later job with the same file, and put on
        the job's `sys.path`.

        Args:
            requirements_file_path: A pip requirements file.
            requirements_cache_dir: A directory of downloaded packages (`pip download -d DIR -r FILE`): pip then
                installs from it alone (`--no-index --find-links DIR`), for clusters without network access.

        Raises:
            PythonEnvironmentError: when the job starts, if pip fails (naming the requirement and pip's last line).
            NotYetSupportedError: at submission, on Ray.
        """
        from fluvial.datastream import python_dependencies

        python_dependencies.set_requirements(self._configuration, requirements_file_path, requirements_cache_dir)

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """Extract an archive for the job's TaskManagers (`python.archives`): into a directory of the job's own,
        under `target_dir`, reachable from the working directory of the TaskManager processes, so a function
        opens `target_dir/...` as in PyFlink's Python workers. The job runs on TaskManager processes
        (`local.taskmanager.mode: auto` takes them; `thread` is refused).

        Args:
            archive_path: A zip (.zip, .jar, .whl, .egg) or tar (.tar, .tar.gz, .tgz, ...) archive.
            target_dir: The directory name it is extracted to; by default the archive's file name.

        Raises:
            PythonEnvironmentError: when the job starts, if the archive cannot be extracted.
            NotYetSupportedError: at submission, on Ray.
        """
        from fluvial.datastream import python_dependencies

        python_dependencies.add_archive(self._configuration, archive_path, target_dir)

    def set_python_executable(self, python_exec: str) -> None:
        """Name the interpreter of the job's workers (`python.executable`). fluvial's TaskManagers run in the
        interpreter of the program, so only that one is accepted.

        Args:
            python_exec: A path to a Python interpreter.

        Raises:
            NotYetSupportedError: at submission, when it names another interpreter.
        """
        from fluvial.datastream import python_dependencies

        python_dependencies.set_executable(self._configuration, python_exec)

    def add_jars(self, *jars_path: str) -> None:
        """Refused: jars load Java connectors into a JVM, and fluvial runs none.

        Raises:
            InvalidJobError: always; use fluvial's Python connectors and formats instead.
        """
        raise InvalidJobError(
            "add_jars loads Java connectors and formats into the JVM, and fluvial runs no JVM; use fluvial's "
            "Python connectors and fluvial.datastream.formats instead"
        )

    def add_classpaths(self, *classpaths: str) -> None:
        """Refused: there is no JVM class path to extend.

        Raises:
            InvalidJobError: always; remove the call.
        """
        raise InvalidJobError("add_classpaths extends the JVM's class path, and fluvial runs no JVM; remove the call")

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> None:
        """Refused: the distributed cache is not supported yet.

        Args:
            file_path: The file to distribute.
            name: The name the job would look it up by.
            executable: Whether the file is executable.

        Raises:
            NotYetSupportedError: always; open the file by its path or URL (any fsspec URL works with FileSource).
        """
        from fluvial.common.errors import NotYetSupportedError

        raise NotYetSupportedError(
            "the distributed cache (register_cached_file) is not supported yet; open the file by its path (any "
            "fsspec URL works with FileSource), or ship Python code with add_python_file"
        )

    def close(self) -> None:
        """PyFlink releases its JVM-side environment here; this environment holds nothing to release."""

    # -- fault tolerance ----------------------------------------------------------------------------------------

    def get_checkpoint_config(self) -> Any:
        """The job's CheckpointConfig: interval, mode, timeout, pauses, storage, tolerated failures."""
        if self._checkpoint_config is None:
            from fluvial.datastream.checkpoint_config import CheckpointConfig

            self._checkpoint_config = CheckpointConfig(self._configuration)
        return self._checkpoint_config

    def enable_checkpointing(self, interval: int, mode: Any = None) -> StreamExecutionEnvironment:
        """Checkpoint every `interval` ms (>= 10), EXACTLY_ONCE unless `mode` says AT_LEAST_ONCE."""
        config = self.get_checkpoint_config()
        config.set_checkpoint_interval(interval)
        if mode is not None:
            config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_interval(self) -> int:
        """The checkpoint interval in ms, or -1 when checkpointing is disabled."""
        return self.get_checkpoint_config().get_checkpoint_interval()

    def get_checkpointing_mode(self) -> Any:
        """The CheckpointingMode: EXACTLY_ONCE (the default) or AT_LEAST_ONCE."""
        return self.get_checkpoint_config().get_checkpointing_mode()

    def get_checkpointing_consistency_mode(self) -> Any:
        """Flink 2's name of `get_checkpointing_mode`."""
        return self.get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether unaligned checkpoints are enabled on the CheckpointConfig."""
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether unaligned checkpoints are forced on the CheckpointConfig."""
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def enable_changelog_state_backend(self, enabled: bool) -> StreamExecutionEnvironment:
        """Turn the changelog state backend on or off (`state.changelog.enabled`, FLIP-158).

        With it, every change to keyed state is also appended to a log; a checkpoint uploads only the part of
        the log written since the previous checkpoint, plus a reference to the last materialization — a full
        snapshot of the job's keyed backend (heap or RocksDB) taken every
        `state.changelog.periodic-materialize.interval`. So a checkpoint's cost follows the rate of change, not
        the size of the state. Savepoints stay canonical (the keyed backend's own full snapshot).

        Args:
            enabled: Whether to enable it.

        Returns:
            This environment.
        """
        if not isinstance(enabled, bool):
            raise InvalidJobError(f"enable_changelog_state_backend takes True or False, got {enabled!r}")
        self._configuration.set_string("state.changelog.enabled", "true" if enabled else "false")
        return self

    def is_changelog_state_backend_enabled(self) -> bool:
        """Whether the changelog state backend is enabled (`state.changelog.enabled`)."""
        return bool(self._configuration.get("state.changelog.enabled"))

    def set_default_savepoint_directory(self, directory: str) -> StreamExecutionEnvironment:
        """Where savepoints go when none is named (`state.savepoints.dir`)."""
        if not isinstance(directory, str) or not directory:
            raise InvalidJobError(f"the default savepoint directory must be a path or URL, got {directory!r}")
        self._configuration.set_string("state.savepoints.dir", directory)
        return self

    def get_default_savepoint_directory(self) -> str | None:
        """The directory savepoints go to when none is given (`state.savepoints.dir`), or None."""
        return self._configuration.get("state.savepoints.dir")

    def set_state_backend(self, state_backend: Any) -> StreamExecutionEnvironment:
        """Set where keyed and operator state live while the job runs.

        Args:
            state_backend: `HashMapStateBackend()` (the default; objects on the heap) or
                `EmbeddedRocksDBStateBackend(...)` (on disk, incremental checkpoints).

        Returns:
            This environment.

        Raises:
            InvalidJobError: `state_backend` is not a state backend.
        """
        from fluvial.datastream.state_backend import StateBackend

        if not isinstance(state_backend, StateBackend):
            raise InvalidJobError(
                f"set_state_backend expects HashMapStateBackend() or EmbeddedRocksDBStateBackend(), got {state_backend!r}"
            )
        self._state_backend = state_backend
        return self

    def get_state_backend(self) -> Any:
        """The state backend set with `set_state_backend`, or None (then `state.backend.type` decides)."""
        if self._state_backend is None:
            from fluvial.datastream.state_backend import state_backend_from_configuration

            return state_backend_from_configuration(self._configuration)
        return self._state_backend

    def set_restart_strategy(self, restart_strategy_configuration: Any) -> StreamExecutionEnvironment:
        """Set how the job restarts after a failure.

        Args:
            restart_strategy_configuration: One of `RestartStrategies.no_restart()`,
                `fixed_delay_restart(attempts, delay)`, `failure_rate_restart(...)`,
                `exponential_delay_restart(...)` or `fall_back_restart()`.

        Returns:
            This environment.

        Example:
            ```python
            env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 1000))
            ```
        """
        from fluvial.common.restart_strategy import RestartStrategyConfiguration

        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise InvalidJobError(
                "set_restart_strategy expects e.g. RestartStrategies.fixed_delay_restart(3, 1000), "
                f"got {restart_strategy_configuration!r}"
            )
        self._restart_strategy = restart_strategy_configuration
        return self

    def get_restart_strategy(self) -> Any:
        """The restart strategy set with `set_restart_strategy`, or None (then the configuration, then Flink's
        default decides: restart forever 1 s apart with checkpointing, else never).
        """
        from fluvial.common.restart_strategy import resolve_restart_strategy

        enabled = self.get_checkpoint_config().is_checkpointing_enabled()
        return resolve_restart_strategy(self._restart_strategy, self._configuration, enabled)

    def _fault_tolerance(self, batch: bool = False) -> Any:
        """What the JobMaster needs about failures. A job that configured none of it loads none of it: start-up
        time is part of every small job's latency. A BATCH job takes no checkpoints (as in Flink)."""
        from fluvial.datastream.fault_tolerance import FaultTolerance

        keys = self._configuration.keys()
        checkpoints = None
        if self._checkpoint_config is not None or any(
            k.startswith(("execution.checkpointing", "state.")) for k in keys
        ):
            checkpoints = self.get_checkpoint_config().settings()
            if batch and checkpoints.enabled:
                logger.info(
                    "checkpointing is disabled: a job in BATCH execution mode takes no checkpoints (a "
                    "failed batch job runs again from its bounded input)"
                )
                checkpoints = dataclasses.replace(checkpoints, interval_ms=-1)
        backend = self._state_backend
        if backend is None and "state.backend.type" in keys:
            backend = self.get_state_backend()
        if self._configuration.get("state.changelog.enabled"):
            from fluvial.datastream.state_backend import ChangelogSettings, ChangelogStateBackend, HashMapStateBackend

            backend = ChangelogStateBackend(backend or HashMapStateBackend(), ChangelogSettings.of(self._configuration))
        return FaultTolerance(
            checkpoints=checkpoints,
            state_backend=backend,
            restart_strategy=self._restart_strategy,
            savepoint_path=self._configuration.get("execution.savepoint.path"),
            allow_non_restored_state=bool(self._configuration.get("execution.savepoint.ignore-unclaimed-state")),
            restart_configured=any(k.startswith("restart-strategy") for k in keys),
            claim_mode=(
                self._configuration.get("execution.state-recovery.claim-mode")
                or self._configuration.get("execution.savepoint-restore-mode")
            ),
        )

    def set_stream_time_characteristic(self, characteristic: Any) -> StreamExecutionEnvironment:
        """Flink 1.x: event time is always on since Flink 1.12; kept so old programs run unchanged."""
        return self

    # -- sources ------------------------------------------------------------------------------------------------

    def from_collection(self, collection: Iterable[Any], type_info: Any = None) -> DataStream:
        """A bounded stream of the elements of `collection`, in order.

        The elements travel with the job (pickled once) and are read by one source subtask.

        Args:
            collection: Any iterable; it is read when the job is built.
            type_info: The elements' type (`Types.ROW_NAMED(...)`, `Types.TUPLE(...)`, ...); records are shaped
                as PyFlink's serializers shape them. None: the Python objects as they are.

        Returns:
            The DataStream of the elements.

        Example:
            ```python
            env.from_collection([(1, "a"), (2, "b")], type_info=Types.TUPLE([Types.INT(), Types.STRING()]))
            ```
        """
        from fluvial.datastream.connectors.collection import CollectionSource

        elements = list(collection)
        if type_info is not None:
            elements = _shaped(elements, type_info, "Source: Collection Source")
        tid = self._add_transformation(
            t.SourceTransformation,
            name="Source: Collection Source",
            operator=t.SourceSpec(CollectionSource(elements)),
            parallelism=1,
            parallelism_fixed=True,
            output_type=type_info,
        )
        return DataStream(self, tid)

    def from_source(
        self, source: Any, watermark_strategy: Any = None, source_name: str | None = None, type_info: Any = None
    ) -> DataStream:
        """A stream read from a Source (FLIP-27): FileSource, NumberSequenceSource, KafkaSource, PostgresSource, ...

        Args:
            source: The Source.
            watermark_strategy: How records get timestamps and watermarks; None: no watermarks.
            source_name: The operator's name, on the dashboard and in metrics.
            type_info: The records' type, when the source does not declare one.

        Returns:
            The DataStream of the source's records.

        Example:
            ```python
            env.from_source(NumberSequenceSource(1, 100), WatermarkStrategy.no_watermarks(), "numbers")
            ```
        """
        if not hasattr(source, "create_reader"):
            raise InvalidJobError(f"from_source expects a Source (e.g. NumberSequenceSource), got {source!r}")
        name = source_name or source.default_name()
        if type_info is None and callable(getattr(source, "get_produced_type", None)):
            type_info = source.get_produced_type()  # what its deserializer produces (a Kafka source's), as in PyFlink
        fixed = source.max_parallelism() == 1
        tid = self._add_transformation(
            t.SourceTransformation,
            name=f"Source: {name}",
            operator=t.SourceSpec(source, watermark_strategy=watermark_strategy),
            parallelism=1 if fixed else None,
            parallelism_fixed=fixed,
            output_type=type_info,
        )
        return DataStream(self, tid)

    def add_receiver(self, receiver: Any, name: str | None = None) -> DataStream:
        """A stream of what a push-source Receiver stores (Spark Streaming's receiver path; DESIGN 2.5)."""
        from fluvial.datastream.connectors.receiver import Receiver, ReceiverSource

        if not isinstance(receiver, Receiver):
            raise InvalidJobError(f"add_receiver expects a fluvial.receiver.Receiver, got {receiver!r}")
        stream_id = self._next_id
        source = ReceiverSource(receiver, stream_id)
        tid = self._add_transformation(
            t.SourceTransformation,
            name=f"Source: {name or receiver.name()}",
            operator=t.SourceSpec(source),
            parallelism=1,
            parallelism_fixed=True,
        )
        return DataStream(self, tid)

    def socket_text_stream(
        self,
        host: str,
        port: int,
        delimiter: str = "\n",
        max_retries: int = 3,
        *,
        max_record_size: int | None = None,
        on_peer_close: Any = None,
        on_peer_reset: Any = None,
    ) -> DataStream:
        """Lines read from a TCP socket, strict UTF-8. The stream ends when the peer closes the connection and
        reconnects when it is reset; `on_peer_close` / `on_peer_reset` (a `fluvial.datastream.connectors.socket.
        DisconnectAction`) change that. A line longer than `max_record_size` bytes (default 1 MiB) fails the
        job. See fluvial.datastream.connectors.socket for the whole contract."""
        from fluvial.datastream.connectors.socket import SocketTextReceiver

        options = {
            name: value
            for name, value in (
                ("max_record_size", max_record_size),
                ("on_peer_close", on_peer_close),
                ("on_peer_reset", on_peer_reset),
            )
            if value is not None
        }
        receiver = SocketTextReceiver(host, port, delimiter, max_retries, **options)
        return self.add_receiver(receiver, f"Socket Stream {host}:{port}")

    def add_source(self, source_func: Any, source_name: str = "Custom Source", type_info: Any = None) -> DataStream:
        """A legacy SourceFunction (`run(ctx)` / `cancel()`), run on a thread of its own; see SourceFunction."""
        from fluvial.datastream.connectors.source import Source
        from fluvial.datastream.connectors.source_function import SourceFunctionSource

        if isinstance(source_func, Source):  # a legacy connector that is a Source here (FlinkKafkaConsumer)
            return self.from_source(source_func, source_name=source_name, type_info=type_info)
        if isinstance(source_func, str) or not callable(getattr(source_func, "run", None)):
            raise InvalidJobError(
                f"add_source takes a SourceFunction with run(ctx) and cancel(), got {source_func!r}; PyFlink's "
                "Java source functions need a JVM: use from_source with a fluvial Source instead"
            )
        return self.from_source(SourceFunctionSource(source_func), source_name=source_name, type_info=type_info)

    def create_input(self, input_format: Any, type_info: Any = None) -> DataStream:
        """Records of an InputFormat (e.g. AvroInputFormat), read as a bounded source."""
        from fluvial.common.io import InputFormat

        if not isinstance(input_format, InputFormat):
            raise InvalidJobError(f"create_input takes an InputFormat (e.g. AvroInputFormat), got {input_format!r}")
        produced = type_info if type_info is not None else input_format.get_produced_type()
        return self.from_source(input_format.create_source(), source_name=input_format.name(), type_info=produced)

    def read_text_file(self, file_path: str, charset_name: str = "UTF-8") -> DataStream:
        """A bounded stream of the lines of a text file (a FileSource with the text-line format).

        Args:
            file_path: A local path or any fsspec URL.
            charset_name: The file's encoding.

        Returns:
            The DataStream of its lines, without their line ends.
        """
        from fluvial.datastream.connectors.file_system import FileSource, StreamFormat

        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(charset_name), file_path).build()
        return self.from_source(source, source_name=f"Text File: {file_path}")

    # -- plans --------------------------------------------------------------------------------------------------

    def get_stream_graph(self, job_name: str | None = None, clear_transformations: bool = False) -> Any:
        """The StreamGraph of the transformations recorded so far: one node per operator, before chaining.

        Args:
            job_name: The job's name.
            clear_transformations: Forget the recorded transformations afterwards.

        Returns:
            The StreamGraph.
        """
        from fluvial.cluster.compile import stream_graph

        return stream_graph(self._pipeline(job_name, clear_transformations))

    def _pipeline(self, job_name: str | None = None, clear_transformations: bool = False) -> Any:
        """The job so far, as a Pipeline; with `clear_transformations`, the next one starts from no sinks."""
        from fluvial.datastream.pipeline import Pipeline

        if not self._pending_sinks:
            raise InvalidJobError(
                "No operators defined in streaming topology. Cannot execute: "
                "add a sink (print(), sink_to(...), add_sink(...)) before execute()"
            )
        batch = self._runs_as_batch(self._reachable(self._pending_sinks))
        pipeline = Pipeline(
            transformations=dict(self._transformations),
            sink_ids=tuple(self._pending_sinks),
            job_name=job_name or self._configuration.get("pipeline.name") or "Flink Streaming Job",
            default_parallelism=self.get_parallelism(),
            default_max_parallelism=self._config.get_max_parallelism(),
            chaining_enabled=self._chaining_enabled,
            execution_config=self._config,
            configuration=self._configuration,
            fault_tolerance=self._fault_tolerance(batch),
            batch=batch,
        )
        if clear_transformations:
            self._pending_sinks.clear()
        return pipeline

    def get_job_graph(self, job_name: str | None = None) -> Any:
        """The JobGraph the job would run as: operators chained into vertices by Flink's rules, with slot sharing.
        `fluvial plan` prints it with the reason each chain broke.

        Args:
            job_name: The job's name.

        Returns:
            The JobGraph.
        """
        from fluvial.cluster.compile import job_graph

        return job_graph(self._pipeline(job_name))

    def get_execution_plan(self) -> str:
        """The job's plan as Flink's execution-plan JSON, which Flink's plan visualizer draws."""
        return self.get_stream_graph().to_execution_plan_json()

    # -- running ------------------------------------------------------------------------------------------------

    def execute(self, job_name: str | None = None) -> Any:
        """Run the job to its end and return a JobExecutionResult; a failure raises JobExecutionException
        whose `__cause__` is the user's exception. Submitted detached (`execution.attached: false`, `fluvial run
        -d`), it returns once the job is submitted, with a result that has only the job's id (Flink's). A
        KeyboardInterrupt (Ctrl-C) cancels the job before it propagates, so a program that catches it leaves no
        job running."""
        client = self.execute_async(job_name)
        if not self._configuration.get("execution.attached"):
            from fluvial.common.job_execution_result import DetachedJobExecutionResult

            return DetachedJobExecutionResult(client.get_job_id())
        try:
            result = client.get_job_execution_result().result()
        except KeyboardInterrupt:
            from fluvial.common.job_client import cancel_on_interrupt

            cancel_on_interrupt(client)
            raise
        listener = execution_listener.get()
        if listener is not None:
            listener(result)
        return result

    def execute_async(self, job_name: str | None = None) -> Any:
        """Submit the job and return its JobClient at once."""
        self._check_runtime_support(self._pending_sinks)
        return self._submit(self._pipeline(job_name, clear_transformations=True))

    def _submit(self, pipeline: Any) -> Any:
        """The one door every submission passes, so the execution interceptor sees them all. The job's
        `python.files` are on sys.path from here until it ends."""
        from fluvial.datastream import python_dependencies

        release = python_dependencies.apply(self._configuration)
        try:
            interceptor = execution_interceptor.get()
            client = _execute(pipeline) if interceptor is None else interceptor(pipeline, _execute)
        except BaseException:
            release()
            raise
        client.get_job_execution_result().add_done_callback(release)
        return client

    def _check_runtime_support(self, roots: list[int]) -> None:
        """Refuse, before anything starts, a job that needs what the runtime does not have yet: operators whose
        runtime is pending (`OperatorSpec.pending_runtime`), Python dependencies that need worker processes. Each
        error names what is missing (NotYetSupportedError). (A BATCH job over unbounded sources is refused when
        the Pipeline is built.)"""
        from fluvial.common.errors import NotYetSupportedError
        from fluvial.datastream import python_dependencies

        reachable = self._reachable(roots)
        for tr in reachable:
            pending = getattr(getattr(tr, "operator", None), "pending_runtime", None)
            if pending:
                raise NotYetSupportedError(f"'{tr.name}' needs {pending}, which is not supported yet")
        target = self._configuration.get("execution.target")
        if not self._configuration.get("execution.attached") and target not in ("remote", "ray"):
            raise ConfigurationError(
                f"execution.attached: false needs a cluster that outlives this program: a session cluster "
                f"(execution.target: remote, as `fluvial run -m HOST:PORT -d` sets it) or Ray (execution.target: "
                f"ray); a job on execution.target {target} runs in this program and ends with it: remove the key"
            )
        if self._configuration.contains_key("rest.address") and target != "remote":
            raise ConfigurationError(
                f"rest.address names the session cluster execution.target remote submits to; on execution.target "
                f"{target} it would do nothing: remove it (rest.bind-address chooses where an embedded job's REST "
                "API listens), or set execution.target: remote"
            )
        # a session cluster on this machine gets the job's python.files modules by value (user_modules.py)
        this_machine = target in ("local", "embedded", "remote")
        python_dependencies.check_supported(self._configuration, this_machine)
        self._log_unenforced_resources(reachable)

    def _runs_as_batch(self, reachable: list[t.Transformation]) -> bool:
        """Whether the job runs in BATCH execution mode: `execution.runtime-mode` BATCH, or AUTOMATIC with every
        source bounded. BATCH with an unbounded source is refused, naming the sources (as Flink refuses it)."""
        mode = self._configuration.get("execution.runtime-mode")
        if mode == "STREAMING":
            return False
        unbounded = sorted(
            tr.name for tr in reachable if isinstance(tr, t.SourceTransformation) and not _is_bounded(tr)
        )
        if mode == "BATCH" and unbounded:
            raise InvalidJobError(
                f"execution.runtime-mode BATCH needs bounded sources, and {', '.join(repr(n) for n in unbounded)} "
                f"{'is' if len(unbounded) == 1 else 'are'} unbounded: run the job with RuntimeExecutionMode."
                "STREAMING (or AUTOMATIC, which picks STREAMING here), or read a bounded input"
            )
        return not unbounded

    def _reachable(self, roots: list[int]) -> list[t.Transformation]:
        seen: dict[int, t.Transformation] = {}
        stack = list(roots)
        while stack:
            tid = stack.pop()
            if tid not in seen:
                seen[tid] = self._transformations[tid]
                stack.extend(seen[tid].input_ids)
        return list(seen.values())

    def _log_unenforced_resources(self, reachable: list[t.Transformation]) -> None:
        names = {tr.slot_sharing_group for tr in reachable if isinstance(tr.slot_sharing_group, str)}
        declared = sorted(n for n in names if getattr(self._slot_sharing_groups.get(n), "has_resources", bool)())
        if declared:
            logger.warning(
                "slot sharing groups %s declare resources (CPU, memory); fluvial's slots are uniform (Flink's "
                "coarse-grained mode), so the resources are recorded but not enforced",
                declared,
            )

    def _execute_and_collect(self, stream: DataStream, job_name: str | None, limit: int | None) -> Any:
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise InvalidJobError(f"execute_and_collect limit must be an integer >= 1, got {limit!r}")
        if not self._configuration.get("execution.attached"):
            raise InvalidJobError(
                "execute_and_collect brings the records to this program, which a detached "
                "submission lets go: run without -d (remove execution.attached: false), or end "
                "the stream in a sink"
            )
        self._check_runtime_support([*self._pending_sinks, stream._id])
        collect_id = os.urandom(16).hex()
        self._add_collect_sink(stream, collect_id)
        client = self._submit(self._pipeline(job_name, clear_transformations=True))
        iterator = client.collect_results(collect_id)
        if limit is None:
            return iterator
        with iterator:
            results = []
            for value in iterator:
                results.append(value)
                if len(results) >= limit:
                    break
            return results

    # -- the transformation registry ----------------------------------------------------------------------------

    def _add_transformation(self, kind: type[t.Transformation], **fields: Any) -> int:
        tid = self._next_id
        self._next_id += 1
        self._transformations[tid] = kind(id=tid, **fields)
        return tid

    def _transformation(self, tid: int) -> t.Transformation:
        return self._transformations[tid]

    def _replace_transformation(self, transformation: t.Transformation) -> None:
        self._transformations[transformation.id] = transformation

    def _add_collect_sink(self, stream: DataStream, collect_id: str) -> int:
        """One collect sink subtask, as Flink's: what one upstream subtask sends arrives in the order it was
        sent, so a job at parallelism 1 (or a source of parallelism 1 chained to it) returns source order."""
        tid = self._add_transformation(
            t.SinkTransformation,
            name="Collect Sink",
            input_id=stream._id,
            operator=t.CollectSpec(collect_id=collect_id),
            parallelism=1,
        )
        self._pending_sinks.append(tid)
        return tid


def _execute(pipeline: Any) -> Any:
    from fluvial.common.pipeline_executor import executor_for

    return executor_for(pipeline.execution_target, pipeline.configuration).execute(pipeline)


def _is_bounded(tr: t.Transformation) -> bool:
    source = tr.operator.function  # type: ignore[attr-defined]
    boundedness = getattr(source, "get_boundedness", None)
    return boundedness is not None and boundedness().value == "BOUNDED"


def _shaped(elements: list, type_info: Any, operator: str) -> list:
    """The elements as the declared type shapes them (tuples to Rows, ...), once, when the job is built; a
    value that does not fit is an error naming the source and the field (`fluvial.common.type_conversion`).
    Types that only check are checked in one generated loop (`fluvial.common.type_checks`). An int outside its
    declared range wraps around, as PyFlink's Java side narrows it."""
    from fluvial.common.type_checks import batch_shaper
    from fluvial.common.type_conversion import java_narrowing

    with java_narrowing():
        shape = batch_shaper(type_info, operator)
    if shape is None:
        return elements
    return shape(elements if isinstance(elements, list) else list(elements))
