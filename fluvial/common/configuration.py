"""Configuration with Flink's keys, and the typed option table that turns strings into checked values.

Users set string keys (`parallelism.default`, `taskmanager.numberOfTaskSlots`, ...) as in Flink. Each key we
understand is declared once in OPTIONS with its parser and default; code deep in the engine reads typed
dataclasses built from here, never raw strings.

No silent configuration: a key fluvial accepts does what it says. Setting any other key is an error at once —
a Flink key fluvial does not implement yet (UNSUPPORTED) names what to do instead, a near-miss of a known key
names that key, and any other unknown key says it would do nothing. A Flink program that sets a key fluvial
ignores would otherwise run, and silently behave differently from what its author asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import ConfigurationError


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false")


def _parse_positive_int(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError("expected an integer >= 1")
    return value


def _parse_non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError("expected an integer >= 0")
    return value


def _parse_duration_ms(raw: str) -> int:
    """Flink duration syntax: '500 ms', '10 s', '1 min', '2 h', or plain milliseconds."""
    text = raw.strip().lower().replace(" ", "")
    units = (("ms", 1), ("min", 60_000), ("s", 1000), ("h", 3_600_000), ("d", 86_400_000))
    for suffix, factor in units:
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return int(float(text[: -len(suffix)]) * factor)
    return int(text)


def _parse_positive_duration_ms(raw: str) -> int:
    value = _parse_duration_ms(raw)
    if value < 1:
        raise ValueError("expected a duration of at least 1 ms")
    return value


def _parse_port(raw: str) -> int:
    value = int(raw)
    if not 0 <= value <= 65535:
        raise ValueError("expected a port number from 0 (any free port) to 65535")
    return value


def _parse_port_range(raw: str) -> tuple[int, int]:
    """Flink's port syntax for reporters: one port, or a range 'from-to' whose first free port is taken."""
    low, _, high = raw.strip().partition("-")
    first = _parse_port(low)
    last = _parse_port(high) if high else first
    if last < first:
        raise ValueError("expected a port or a range 'from-to' with from <= to")
    return first, last


def _parse_host(raw: str) -> str:
    value = raw.strip()
    if not value or any(char.isspace() for char in value):
        raise ValueError("expected a host name or an IP address, such as 127.0.0.1 or 0.0.0.0")
    return value


def _parse_host_list(raw: str | list | tuple) -> tuple[str, ...]:
    names = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(_parse_host(str(name)) for name in names if str(name).strip())


_PROMETHEUS_FACTORIES = (
    "org.apache.flink.metrics.prometheus.PrometheusReporterFactory",
    "org.apache.flink.metrics.prometheus.PrometheusReporter",
)


def _prometheus_factory(raw: str) -> str:
    value = raw.strip()
    if value not in _PROMETHEUS_FACTORIES:
        raise ValueError(
            f"fluvial has the Prometheus reporter only ({_PROMETHEUS_FACTORIES[0]}); remove the key "
            "or name that factory, and set metrics.reporter.prom.port"
        )
    return value


def _runtime_mode(raw: str) -> str:
    value = raw.strip().upper()
    if value not in ("STREAMING", "BATCH", "AUTOMATIC"):
        raise ValueError("expected STREAMING, BATCH or AUTOMATIC")
    return value


def check_buffer_timeout(timeout_ms: int) -> int:
    """Flink's buffer timeout bounds how long a record may wait in a partly filled output buffer (-1: until the
    buffer is full, trading latency for throughput). fluvial hands every batch to its channel as soon as an
    operator chain produced it — its buffers are the batches — so every setting's promise holds (no record waits
    longer than it allows); PyFlink programs that set it run unchanged."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise ConfigurationError(f"the buffer timeout must be an integer number of milliseconds, got {timeout_ms!r}")
    if timeout_ms < -1:
        raise ConfigurationError(f"buffer timeout {timeout_ms} is invalid: use -1 (flush when full), 0 or more ms")
    return timeout_ms


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value

    return parse


def _claim_mode(raw: str) -> Any:
    from fluvial.common.recovery_claim_mode import RecoveryClaimMode

    return RecoveryClaimMode.parse(raw)


@dataclass(frozen=True)
class ConfigOption:
    key: str
    parse: Callable[[str], Any]
    default: Any
    description: str


OPTIONS: dict[str, ConfigOption] = {
    option.key: option
    for option in (
        ConfigOption("parallelism.default", _parse_positive_int, None, "default parallelism of operators"),
        ConfigOption("pipeline.max-parallelism", _parse_positive_int, None, "default max parallelism"),
        ConfigOption("pipeline.name", str, None, "job name"),
        ConfigOption("pipeline.operator-chaining.enabled", _parse_bool, True, "chain operators"),
        ConfigOption("pipeline.auto-watermark-interval", _parse_duration_ms, 200, "periodic watermarks"),
        ConfigOption("execution.runtime-mode", _runtime_mode, "STREAMING", "STREAMING, BATCH or AUTOMATIC"),
        ConfigOption("python.files", str, None, "Python files and directories put on sys.path of the job"),
        ConfigOption("python.requirements", str, None, "requirements file[#download cache dir] for the job"),
        ConfigOption("python.archives", str, None, "archives extracted for the job"),
        ConfigOption(
            "python.requirements.install-dir",
            str,
            None,
            "where python.requirements are installed, one directory per requirements file content, reused by "
            "later jobs (default: ~/.cache/fluvial/python-requirements)",
        ),
        ConfigOption("python.executable", str, None, "Python interpreter of the job's workers"),
        ConfigOption(
            "jobmanager.archive.fs.dir",
            str,
            None,
            "directory (or file system URL) where finished jobs are archived for the history server",
        ),
        ConfigOption(
            "historyserver.archive.fs.dir",
            str,
            None,
            "comma-separated directories the history server reads job archives from",
        ),
        ConfigOption(
            "historyserver.archive.fs.refresh-interval",
            _parse_positive_duration_ms,
            10_000,
            "how often the history server looks for new archives",
        ),
        ConfigOption("historyserver.web.port", _parse_port, 8082, "the history server's port (0: any free port)"),
        ConfigOption(
            "historyserver.web.address", _parse_host, "127.0.0.1", "the address the history server listens on"
        ),
        ConfigOption(
            "env.log.dir",
            str,
            None,
            "directory of fluvial's log files (default: $FLUVIAL_LOG_DIR, else ~/.fluvial/log)",
        ),
        ConfigOption("env.log.max", _parse_positive_int, 10, "rotated log files kept per log (each up to 100 MB)"),
        ConfigOption(
            "execution.target",
            _one_of("local", "embedded", "remote", "ray"),
            "local",
            "where jobs run: local (embedded), remote (a session cluster at rest.address:rest.port), ray",
        ),
        ConfigOption(
            "execution.attached",
            _parse_bool,
            True,
            "execute() waits for the job's end; false (`fluvial run -d`): it returns once the job is "
            "submitted (execution.target remote, or ray: its JobMaster a detached Ray actor)",
        ),
        ConfigOption(
            "execution.buffer-timeout",
            lambda raw: check_buffer_timeout(_parse_duration_ms(raw)),
            100,
            "longest wait of a record in a partly filled buffer (always met: batches go out at once)",
        ),
        ConfigOption("execution.checkpointing.interval", _parse_duration_ms, None, "checkpoint interval"),
        ConfigOption("execution.savepoint.path", str, None, "restore from this savepoint"),
        ConfigOption("state.backend.type", _one_of("hashmap", "rocksdb"), "hashmap", "state backend"),
        ConfigOption(
            "state.backend.rocksdb.predefined-options",
            _one_of("default", "spinning_disk_optimized", "spinning_disk_optimized_high_mem", "flash_ssd_optimized"),
            "default",
            "the RocksDB option profile of state.backend.type: rocksdb (Flink's PredefinedOptions)",
        ),
        ConfigOption(
            "state.changelog.enabled",
            _parse_bool,
            False,
            "the changelog state backend (FLIP-158): state changes are logged and checkpoints upload only the "
            "changes since the last one; the keyed backend's full snapshot is taken periodically",
        ),
        ConfigOption(
            "state.changelog.storage",
            _one_of("memory", "filesystem"),
            "memory",
            "where the changelog's changes go: memory (inline in the checkpoint) or filesystem "
            "(files under state.changelog.dstl.dfs.base-path)",
        ),
        ConfigOption(
            "state.changelog.periodic-materialize.enabled",
            _parse_bool,
            True,
            "materialize the changelog state backend periodically (a full snapshot of the keyed backend, after "
            "which older changes need not be replayed)",
        ),
        ConfigOption(
            "state.changelog.periodic-materialize.interval",
            _parse_positive_duration_ms,
            600_000,
            "how often the changelog state backend materializes (checked at each checkpoint)",
        ),
        ConfigOption(
            "state.changelog.max-failures-allowed",
            _parse_non_negative_int,
            3,
            "failed materializations of one subtask's changelog state backend tolerated before the task fails",
        ),
        ConfigOption(
            "state.changelog.dstl.dfs.base-path",
            str,
            None,
            "directory (local path or fsspec URL) of the changelog's files when state.changelog.storage is filesystem",
        ),
        ConfigOption(
            "state.changelog.dstl.dfs.compression.enabled",
            _parse_bool,
            False,
            "compress the changelog's files (zlib)",
        ),
        ConfigOption(
            "state.changelog.dstl.dfs.upload.max-attempts",
            _parse_positive_int,
            3,
            "attempts to write one changelog file before the checkpoint fails",
        ),
        ConfigOption(
            "state.changelog.dstl.dfs.upload.next-attempt-delay",
            _parse_duration_ms,
            500,
            "pause before the next attempt to write a changelog file",
        ),
        ConfigOption("state.checkpoints.dir", str, None, "checkpoint directory"),
        ConfigOption("state.checkpoints.num-retained", _parse_positive_int, 1, "retained checkpoints"),
        ConfigOption(
            "execution.checkpointing.mode",
            _one_of("exactly_once", "at_least_once"),
            "exactly_once",
            "checkpointing mode",
        ),
        ConfigOption(
            "execution.checkpointing.externalized-checkpoint-retention",
            _one_of("delete_on_cancellation", "retain_on_cancellation", "no_externalized_checkpoints"),
            "no_externalized_checkpoints",
            "whether a cancelled job's retained checkpoints are deleted (DELETE_ON_CANCELLATION) or kept",
        ),
        ConfigOption("execution.checkpointing.timeout", _parse_duration_ms, 600_000, "checkpoint timeout"),
        ConfigOption("execution.checkpointing.min-pause", _parse_duration_ms, 0, "pause between checkpoints"),
        ConfigOption(
            "execution.checkpointing.max-concurrent-checkpoints", _parse_positive_int, 1, "checkpoints in flight"
        ),
        ConfigOption("execution.checkpointing.tolerable-failed-checkpoints", int, 0, "tolerated failures"),
        ConfigOption(
            "execution.checkpointing.checkpoints-after-tasks-finish",
            _parse_bool,
            True,
            "checkpoints go on after tasks finish; a bounded job commits through a final checkpoint",
        ),
        ConfigOption(
            "execution.checkpointing.checkpoints-after-tasks-finish.enabled",
            _parse_bool,
            None,
            "Flink 1.x name of execution.checkpointing.checkpoints-after-tasks-finish",
        ),
        ConfigOption(
            "execution.checkpointing.unaligned.enabled",
            _parse_bool,
            False,
            "unaligned checkpoints: barriers overtake queued buffers, which are persisted (FLIP-76)",
        ),
        ConfigOption(
            "execution.checkpointing.unaligned",
            _parse_bool,
            None,
            "Flink 1.x name of execution.checkpointing.unaligned.enabled",
        ),
        ConfigOption(
            "execution.checkpointing.unaligned.forced",
            _parse_bool,
            False,
            "turn unaligned checkpoints on where they would be refused (fluvial has no such jobs)",
        ),
        ConfigOption(
            "execution.checkpointing.aligned-checkpoint-timeout",
            _parse_duration_ms,
            0,
            "with unaligned checkpoints: start aligned, turn unaligned after this (0: unaligned at once)",
        ),
        ConfigOption(
            "execution.checkpointing.alignment-timeout",
            _parse_duration_ms,
            None,
            "Flink 1.x name of execution.checkpointing.aligned-checkpoint-timeout",
        ),
        ConfigOption("state.savepoints.dir", str, None, "default savepoint directory"),
        ConfigOption("execution.savepoint.ignore-unclaimed-state", _parse_bool, False, "allow_non_restored_state"),
        ConfigOption(
            "execution.state-recovery.claim-mode",
            _claim_mode,
            None,
            "NO_CLAIM (default) or CLAIM: who owns the snapshot a job starts from",
        ),
        ConfigOption(
            "execution.savepoint-restore-mode",
            _claim_mode,
            None,
            "deprecated name of execution.state-recovery.claim-mode",
        ),
        ConfigOption("taskmanager.numberOfTaskSlots", _parse_positive_int, None, "slots per TaskManager"),
        ConfigOption(
            "task.cancellation.interval",
            _parse_duration_ms,
            30_000,
            "time between interrupts of a task that does not cancel",
        ),
        ConfigOption(
            "task.cancellation.timeout",
            _parse_duration_ms,
            180_000,
            "time after which a task that does not cancel is given up (0: never)",
        ),
        ConfigOption(
            "taskmanager.network.memory.buffer-debloat.enabled",
            _parse_bool,
            False,
            "adapt the records per network buffer so queued input takes about the target time (FLIP-183)",
        ),
        ConfigOption(
            "taskmanager.network.memory.buffer-debloat.target",
            _parse_positive_duration_ms,
            1000,
            "how long the data queued on a task's input channels should take it to process",
        ),
        ConfigOption(
            "taskmanager.network.memory.buffer-debloat.period",
            _parse_positive_duration_ms,
            200,
            "how often the debloated buffer size is recomputed",
        ),
        ConfigOption("local.number-taskmanager", _parse_positive_int, 1, "TaskManagers of the MiniCluster"),
        ConfigOption(
            "local.taskmanager.mode",
            _one_of("thread", "process", "auto"),
            "auto",
            "TaskManagers as threads of this process, as processes, or auto: processes when the job's "
            "highest parallelism is above 1",
        ),
        ConfigOption(
            "local.rest.keep-serving",
            _parse_bool,
            False,
            "an embedded job's REST API and dashboard keep serving after the job ends, until the program "
            "exits (`fluvial run --web` sets it, and waits for Ctrl-C)",
        ),
        ConfigOption("taskmanager.bind-host", str, "127.0.0.1", "the address TaskManager listeners bind to"),
        ConfigOption("heartbeat.interval", _parse_duration_ms, 10_000, "TaskManager heartbeat interval"),
        ConfigOption("heartbeat.timeout", _parse_duration_ms, 50_000, "a TaskManager silent this long is lost"),
        ConfigOption(
            "rest.port",
            _parse_port,
            8081,
            "embedded jobs: serve their REST API and dashboard on this port while they run (0: any free "
            "port); execution.target remote: the port of the session cluster's REST API",
        ),
        ConfigOption(
            "rest.address",
            _parse_host,
            "127.0.0.1",
            "execution.target remote: the host of the session cluster's REST API (`fluvial run -m`)",
        ),
        ConfigOption(
            "slot.request.timeout",
            _parse_positive_duration_ms,
            300_000,
            "how long a job submitted to a session cluster waits for free task slots before it fails",
        ),
        ConfigOption(
            "rest.bind-address",
            _parse_host,
            "127.0.0.1",
            "the address the REST API, the dashboard and the Prometheus endpoint listen on",
        ),
        ConfigOption(
            "rest.allowed-hosts",
            _parse_host_list,
            (),
            "Host names the REST API answers to besides its bind address and the loopback names "
            "(comma-separated; '*': any). Other Host headers are refused (DNS rebinding)",
        ),
        ConfigOption(
            "metrics.reporter.prom.port",
            _parse_port_range,
            None,
            "serve the job's metrics in Prometheus' text format on this port (or the first free one of a "
            "range 'from-to') while it runs",
        ),
        ConfigOption(
            "metrics.reporter.prom.factory.class",
            _prometheus_factory,
            None,
            "Flink's reporter class; only the Prometheus (pull) reporter is available",
        ),
        ConfigOption(
            "metrics.fetcher.update-interval",
            _parse_positive_duration_ms,
            1000,
            "how often running tasks report their metrics: how fresh the REST API, the dashboard and "
            "Prometheus figures are",
        ),
        ConfigOption(
            "ray.address",
            str,
            None,
            "the Ray cluster of execution.target ray: host:port of its head, auto, or local (a cluster "
            "of this process's own); unset: the cluster ray is initialised with, else auto, else local",
        ),
        ConfigOption(
            "ray.placement-strategy",
            _one_of("pack", "spread", "strict_pack", "strict_spread"),
            "spread",
            "how Ray places the job's TaskManagers (one placement-group bundle each) over its nodes",
        ),
        ConfigOption(
            "ray.placement-timeout",
            _parse_duration_ms,
            60_000,
            "how long a job waits for Ray to reserve its slots before it fails",
        ),
        ConfigOption(
            "ray.working-dir",
            str,
            None,
            "a directory shipped to every TaskManager actor as its working directory (Ray's runtime_env working_dir)",
        ),
        ConfigOption(
            "ray.shared-filesystem",
            _parse_bool,
            False,
            "local paths (checkpoints, savepoints) name one filesystem shared by every Ray node",
        ),
        ConfigOption("receiver.block-interval", _parse_duration_ms, 200, "receiver block interval"),
        ConfigOption("receiver.block-queue-size", _parse_positive_int, 10, "receiver block queue"),
        ConfigOption("receiver.write-ahead-log.enable", _parse_bool, False, "receiver WAL"),
        ConfigOption("receiver.max-rate", int, 0, "receiver records per second (0: unlimited)"),
        ConfigOption(
            "receiver.block-store-timeout",
            _parse_duration_ms,
            30_000,
            "how long storing a block (store and write-ahead log) may take",
        ),
    )
}


def _register_restart_strategy_keys() -> None:
    """The restart-strategy keys are parsed by `restart_strategy.py` (durations, aliases); here they are only
    known, so setting one is accepted."""
    from fluvial.common.restart_strategy import RESTART_STRATEGY_KEYS

    for key in RESTART_STRATEGY_KEYS:
        OPTIONS.setdefault(key, ConfigOption(key, str, None, "restart strategy"))


@dataclass(frozen=True, slots=True)
class UnsupportedOption:
    """A Flink key (and the keys under it), or a namespace (ending in '.'), that fluvial does not implement yet,
    with what to do instead. Setting one is an error carrying `instead`; a key moves to OPTIONS when it works."""

    key: str
    instead: str

    def matches(self, key: str) -> bool:
        namespace = self.key if self.key.endswith(".") else self.key + "."
        return key == self.key or key.startswith(namespace)


_NO_WEB = (
    "fluvial's REST API and dashboard take rest.port, rest.address, rest.bind-address and "
    "rest.allowed-hosts only; remove the key (`fluvial run --web JOB.py` serves them for a job)"
)
_NO_JVM = "fluvial runs no JVM, so the key has nothing to act on. Remove it"

UNSUPPORTED: tuple[UnsupportedOption, ...] = (
    UnsupportedOption("rest.", _NO_WEB),
    UnsupportedOption("web.", _NO_WEB),
    UnsupportedOption(
        "metrics.",
        "fluvial's metrics take metrics.reporter.prom.port (Prometheus, the one "
        "reporter), metrics.reporter.prom.factory.class and "
        "metrics.fetcher.update-interval only; remove the key",
    ),
    UnsupportedOption(
        "execution.checkpointing.unaligned.",
        "fluvial's unaligned checkpoints take execution.checkpointing.unaligned.enabled, "
        "execution.checkpointing.unaligned.forced and execution.checkpointing.aligned-checkpoint-timeout "
        "only. Remove the key",
    ),
    UnsupportedOption(
        "state.backend.incremental",
        "set it in code: env.set_state_backend(EmbeddedRocksDBStateBackend("
        "enable_incremental_checkpointing=...)); incremental is that backend's default",
    ),
    UnsupportedOption(
        "state.backend.rocksdb.",
        "configure EmbeddedRocksDBStateBackend in code (e.g. set_db_storage_paths) and pass it to "
        "env.set_state_backend",
    ),
    UnsupportedOption(
        "state.changelog.dstl.",
        "fluvial's changelog storage takes state.changelog.dstl.dfs.base-path, "
        "state.changelog.dstl.dfs.compression.enabled, state.changelog.dstl.dfs.upload.max-attempts and "
        "state.changelog.dstl.dfs.upload.next-attempt-delay only: each subtask writes its changes once per "
        "checkpoint, on the checkpoint I/O thread, with no batching or upload pool to tune. Remove the key",
    ),
    UnsupportedOption("taskmanager.memory.", "fluvial does not size TaskManager memory yet. Remove the key"),
    UnsupportedOption("jobmanager.memory.", "fluvial does not size JobManager memory yet. Remove the key"),
    UnsupportedOption(
        "python.",
        "fluvial runs Python functions in its own tasks, with no separate Python worker to tune. Remove the key",
    ),
    UnsupportedOption("pipeline.jars", _NO_JVM),
    UnsupportedOption("pipeline.classpaths", _NO_JVM),
)


def unsupported_option(key: str) -> UnsupportedOption | None:
    """The UNSUPPORTED entry `key` falls under, if any (a key fluvial knows never is)."""
    if key in OPTIONS:
        return None
    return next((option for option in UNSUPPORTED if option.matches(key)), None)


# Namespaces that are ours alone: an unknown key here is listed with the keys we know in it.
_OWN_NAMESPACES = ("local.", "receiver.", "ray.")
# Flink's and fluvial's namespaces: an unknown key in one of them names a setting of the engine, which would do
# nothing here, so it is refused. A key outside them (`my-app.threshold`) is the program's own, kept for its
# code to read through get_configuration(), as Flink's Configuration keeps it.
_ENGINE_NAMESPACES = (
    "parallelism.",
    "pipeline.",
    "execution.",
    "state.",
    "taskmanager.",
    "jobmanager.",
    "restart-strategy",
    "rest.",
    "web.",
    "metrics.",
    "python.",
    "heartbeat.",
    "local.",
    "receiver.",
    "high-availability.",
    "cluster.",
    "akka.",
    "pekko.",
    "blob.",
    "io.",
    "security.",
    "table.",
    "env.",
    "kubernetes.",
    "yarn.",
    "fs.",
    "s3.",
    "checkpointing.",
    "savepoint.",
    "resourcemanager.",
    "slot.",
    "slotmanager.",
    "process.",
    "client.",
    "ray.",
)


# Flink's deprecated keys that still work there, and the key each is now: set or read, they mean the current key.
DEPRECATED_KEYS = {
    "pipeline.operator-chaining": "pipeline.operator-chaining.enabled",
}


def _current_key(key: str) -> str:
    return DEPRECATED_KEYS.get(key, key) if isinstance(key, str) else key


class Configuration:
    """A string-keyed map with Flink's typed getters and setters (PyFlink `pyflink.common.Configuration`)."""

    def __init__(self, other: Configuration | None = None) -> None:
        self._data: dict[str, str] = dict(other._data) if other is not None else {}

    def set_string(self, key: str, value: str) -> Configuration:
        """Set a key to a string value.

        Args:
            key: A configuration key (see the configuration reference) or a key of your own outside the engine's
                namespaces.
            value: The value, as Flink writes it (`10 s`, `true`, `hashmap`).

        Returns:
            This configuration.

        Raises:
            ConfigurationError: the key is unknown (a near-miss names the key it resembles) or refused by fluvial.

        Example:
            ```python
            config = Configuration().set_string("state.backend.type", "rocksdb")
            ```
        """
        key = _current_key(key)
        check_key(key)
        self._data[key] = str(value)
        return self

    def set_integer(self, key: str, value: int) -> Configuration:
        """Set a key to an integer (stored as its string).

        Args:
            key: The key.
            value: The value.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: the key is unknown or refused.
        """
        return self.set_string(key, str(int(value)))

    def set_boolean(self, key: str, value: bool) -> Configuration:
        """Set a key to a boolean (stored as `true`/`false`).

        Args:
            key: The key.
            value: The value.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: the key is unknown or refused.
        """
        return self.set_string(key, "true" if value else "false")

    def set_float(self, key: str, value: float) -> Configuration:
        """Set a key to a float (stored as its string).

        Args:
            key: The key.
            value: The value.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: the key is unknown or refused.
        """
        return self.set_string(key, str(float(value)))

    def get_string(self, key: str, default_value: str | None = None) -> str | None:
        """The value of a key as a string.

        Args:
            key: The key.
            default_value: What to return when it is not set.

        Returns:
            The value, or `default_value`.
        """
        return self._data.get(_current_key(key), default_value)

    def get_integer(self, key: str, default_value: int | None = None) -> int | None:
        """The value of a key as an integer.

        Args:
            key: The key.
            default_value: What to return when it is not set.

        Returns:
            The value, or `default_value`.

        Raises:
            ValueError: the value is not an integer.
        """
        raw = self._data.get(_current_key(key))
        return default_value if raw is None else int(raw)

    def get_boolean(self, key: str, default_value: bool | None = None) -> bool | None:
        """The value of a key as a boolean (`true`/`false`).

        Args:
            key: The key.
            default_value: What to return when it is not set.

        Returns:
            The value, or `default_value`.
        """
        raw = self._data.get(_current_key(key))
        return default_value if raw is None else _parse_bool(raw)

    def get_float(self, key: str, default_value: float | None = None) -> float | None:
        """The value of a key as a float.

        Args:
            key: The key.
            default_value: What to return when it is not set.

        Returns:
            The value, or `default_value`.
        """
        raw = self._data.get(_current_key(key))
        return default_value if raw is None else float(raw)

    def get_value(self, option: Any) -> Any:
        """A PyFlink `ConfigOption`'s typed value: its key, else a fallback or deprecated key, else its
        default (`fluvial.common.config_options`)."""
        for key in option.lookup_keys():
            raw = self._data.get(key)
            if raw is not None:
                return option.parse(raw)
        return option.default_value()

    def set_value(self, option: Any, value: Any) -> Configuration:
        """Set a PyFlink `ConfigOption` (booleans as `true`/`false`, maps as `k1:v1,k2:v2`)."""
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, dict):
            text = ",".join(f"{k}:{v}" for k, v in value.items())
        else:
            text = str(value)
        option.parse(text)  # a value the option cannot read back fails here, not at use
        return self.set_string(option.key(), text)

    def contains_key(self, key: str) -> bool:
        """Whether `key` is set."""
        return _current_key(key) in self._data

    def remove_config(self, key: str) -> bool:
        """Unset `key`.

        Returns:
            Whether it was set.
        """
        return self._data.pop(_current_key(key), None) is not None

    def key_set(self) -> set[str]:
        """The keys that are set, as a set."""
        return set(self._data)

    def keys(self) -> list[str]:
        """The keys that are set, as a list."""
        return list(self._data)

    def to_dict(self) -> dict[str, str]:
        """Every key with its value as a string."""
        return dict(self._data)

    @classmethod
    def from_dict(cls, map: dict[str, str]) -> Configuration:
        """A configuration holding every key of `map`, each checked as `set_string` checks it.

        Args:
            map: Keys and their values as strings.

        Returns:
            The new configuration.
        """
        configuration = cls()
        for key, value in map.items():
            configuration.set_string(key, value)
        return configuration

    def add_all_to_dict(self, target_dict: dict[str, Any]) -> None:
        """Put every key with its value as a string into `target_dict` (PyFlink's name).

        Args:
            target_dict: The dict to update.
        """
        target_dict.update(self._data)

    def add_all(self, other: Configuration) -> Configuration:
        """Set every key of `other` here too (its values win).

        Args:
            other: Another Configuration.

        Returns:
            This configuration.
        """
        self._data.update(other._data)
        return self

    def get(self, key: str) -> Any:
        """The typed value of a known key: its parsed setting, or its default."""
        option = OPTIONS.get(key)
        if option is None:
            raise ConfigurationError(f"unknown configuration key '{key}': {_unknown_key_hint(key)}")
        raw = self._data.get(key)
        if raw is None:
            return option.default
        try:
            return option.parse(raw)
        except ValueError as exc:
            raise ConfigurationError(
                f"configuration '{key}' has the value {raw!r}, which is not valid ({exc}); fix the value"
            ) from None

    def validate(self) -> None:
        """Parse every known key now, so a bad value fails at submission, not mid-job."""
        for key in self._data:
            if key in OPTIONS:
                self.get(key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and other._data == self._data

    def __repr__(self) -> str:
        return f"Configuration({self._data!r})"


def check_key(key: str) -> None:
    """Reject every engine key fluvial does not act on — unknown in an engine namespace, a near miss of a known
    key, or a Flink key fluvial does not support — so that no setting is accepted and then silently ignored."""
    if not isinstance(key, str) or not key:
        raise ConfigurationError(f"a configuration key must be a non-empty string, got {key!r}")
    if key in OPTIONS:
        return
    if key.startswith("restart-strategy"):
        _register_restart_strategy_keys()  # loaded on first use: most jobs never name a restart strategy
        if key in OPTIONS:
            return
    unsupported = unsupported_option(key)
    if unsupported is not None:
        raise ConfigurationError(f"configuration key '{key}' is not supported by fluvial yet: {unsupported.instead}")
    hint = _unknown_key_hint(key)
    if key.startswith(_ENGINE_NAMESPACES) or hint.startswith("did you mean"):
        raise ConfigurationError(f"unknown configuration key '{key}': {hint}")


def _unknown_key_hint(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(key, OPTIONS, n=1, cutoff=0.85)
    if close:
        return f"did you mean '{close[0]}'?"
    if key.startswith(_OWN_NAMESPACES):
        return "known keys: " + ", ".join(k for k in OPTIONS if k.startswith(_OWN_NAMESPACES))
    return (
        "fluvial does not know it, so it would do nothing: remove it. `fluvial config` lists the keys fluvial "
        "knows, with their defaults (`fluvial config PREFIX` those starting with PREFIX)"
    )
