"""How working state is kept (PyFlink `pyflink.datastream.state_backend`): picklable descriptions only.

A description is set with `env.set_state_backend(...)`, travels with the job, and each task builds its live
keyed state backend from it at open (fluvial.state.heap for HashMapStateBackend, fluvial.state.rocksdb for
EmbeddedRocksDBStateBackend). Where checkpoints are written is a separate choice (checkpoint_storage).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Any

from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.file_paths import local_path, normalise_path

__all__ = [
    "ChangelogSettings",
    "ChangelogStateBackend",
    "CustomStateBackend",
    "EmbeddedRocksDBStateBackend",
    "HashMapStateBackend",
    "PredefinedOptions",
    "StateBackend",
    "state_backend_from_configuration",
]


class StateBackend:
    """Base of the state backend descriptions (PyFlink's `StateBackend`)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and _fields(other) == _fields(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(_fields(self).items(), key=lambda item: item[0]))))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in _fields(self).items())
        return f"{type(self).__name__}({inner})"


def _fields(backend: StateBackend) -> dict[str, Any]:
    names = [name for cls in type(backend).__mro__ for name in getattr(cls, "__slots__", ())]
    return {name.lstrip("_"): getattr(backend, name) for name in names}


class HashMapStateBackend(StateBackend):
    """Keyed state lives in Python objects on the task; a checkpoint copies it (Flink's HashMapStateBackend)."""

    __slots__ = ()

    def __reduce__(self) -> tuple[type, tuple]:
        return (HashMapStateBackend, ())


class PredefinedOptions(enum.Enum):
    """Flink's RocksDB option profiles: each sets the RocksDB options Flink's profile of the same name sets
    (fluvial.state.rocksdb_options) when a subtask opens its database; DEFAULT keeps RocksDB's defaults."""

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


class EmbeddedRocksDBStateBackend(StateBackend):
    """Keyed state lives in an embedded RocksDB (memory and local disk); checkpoints use RocksDB checkpoints.

    With incremental checkpointing (the default here; PyFlink's default is off) a checkpoint uploads only the
    RocksDB files created since the previous one and references the rest in the checkpoint storage's shared
    directory. `db_storage_paths`: local directories for the working databases (empty: a temporary directory
    per task). `number_of_transfer_threads`: threads uploading and downloading files.
    """

    __slots__ = (
        "_db_storage_paths",
        "_enable_incremental_checkpointing",
        "_number_of_transfer_threads",
        "_predefined_options",
    )

    DEFAULT_NUMBER_OF_TRANSFER_THREADS = 4

    def __init__(self, enable_incremental_checkpointing: bool | None = True) -> None:
        if enable_incremental_checkpointing is None:
            enable_incremental_checkpointing = True
        if not isinstance(enable_incremental_checkpointing, bool):
            raise InvalidJobError(
                f"EmbeddedRocksDBStateBackend enable_incremental_checkpointing must be True or False, got "
                f"{enable_incremental_checkpointing!r}"
            )
        self._enable_incremental_checkpointing = enable_incremental_checkpointing
        self._db_storage_paths: tuple[str, ...] = ()
        self._number_of_transfer_threads = self.DEFAULT_NUMBER_OF_TRANSFER_THREADS
        self._predefined_options = PredefinedOptions.DEFAULT

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_rocksdb,
            (
                self._enable_incremental_checkpointing,
                self._db_storage_paths,
                self._number_of_transfer_threads,
                self._predefined_options.name,
            ),
        )

    def is_incremental_checkpointing_enabled(self) -> bool:
        """Whether checkpoints upload only the RocksDB files new since the last one."""
        return self._enable_incremental_checkpointing

    def is_incremental_checkpoints_enabled(self) -> bool:
        """Whether checkpoints upload only the RocksDB files new since the last one (PyFlink 2's name)."""
        return self._enable_incremental_checkpointing

    def set_db_storage_path(self, path: str) -> None:
        """Put RocksDB's working files under `path` (default: a private directory under the system's temporary
        directory).

        Args:
            path: A local directory.
        """
        self.set_db_storage_paths(path)

    def set_db_storage_paths(self, *paths: str) -> None:
        """Local directories for the working databases; tasks are spread over them. None/empty resets."""
        cleaned: list[str] = []
        for path in paths:
            if path is None:
                continue
            if isinstance(path, os.PathLike):
                path = os.fspath(path)
            if not isinstance(path, str) or not path.strip():
                raise InvalidJobError(f"a RocksDB storage path must be a non-empty local directory, got {path!r}")
            if "://" in path and not path.startswith("file://"):
                raise InvalidJobError(
                    f"RocksDB storage path {path!r} is not local: RocksDB works on a local disk; give a local "
                    "directory (checkpoints go to the checkpoint storage instead)"
                )
            cleaned.append(local_path(normalise_path(path)))
        self._db_storage_paths = tuple(cleaned)

    def get_db_storage_paths(self) -> list[str]:
        """The directories RocksDB's working files go under."""
        return list(self._db_storage_paths)

    def set_number_of_transfer_threads(self, number_of_transfer_threads: int) -> None:
        """Set how many threads upload and download state files.

        Args:
            number_of_transfer_threads: At least 1.
        """
        if (
            isinstance(number_of_transfer_threads, bool)
            or not isinstance(number_of_transfer_threads, int)
            or number_of_transfer_threads < 1
        ):
            raise InvalidJobError(
                f"the number of RocksDB transfer threads must be an integer >= 1, got {number_of_transfer_threads!r}"
            )
        self._number_of_transfer_threads = number_of_transfer_threads

    def get_number_of_transfer_threads(self) -> int:
        """How many threads upload and download state files."""
        return self._number_of_transfer_threads

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        """Choose the RocksDB options profile every subtask's database opens with (Flink's PredefinedOptions:
        each sets the RocksDB options Flink's profile of that name sets, fluvial.state.rocksdb_options).

        Args:
            options: A PredefinedOptions.

        Raises:
            InvalidJobError: `options` is not a PredefinedOptions.
        """
        if not isinstance(options, PredefinedOptions):
            members = ", ".join(f"PredefinedOptions.{member.name}" for member in PredefinedOptions)
            raise InvalidJobError(f"set_predefined_options takes one of {members}, got {options!r}")
        self._predefined_options = options

    def get_predefined_options(self) -> PredefinedOptions:
        """The RocksDB options profile (DEFAULT unless set)."""
        return self._predefined_options

    def set_options(self, options_factory_class_name: str) -> None:
        """PyFlink names a Java `RocksDBOptionsFactory` class here; fluvial runs no JVM, so there is no class to
        load: refused rather than accepted and ignored.

        Args:
            options_factory_class_name: The Java class name PyFlink would load.

        Raises:
            InvalidJobError: always; use set_predefined_options.
        """
        raise InvalidJobError(
            f"set_options({options_factory_class_name!r}) names a Java RocksDBOptionsFactory, and fluvial runs no "
            "JVM: choose a profile with set_predefined_options(PredefinedOptions...) instead"
        )

    def get_options(self) -> str | None:
        """The Java options factory's class name; always None in fluvial (see set_options)."""
        return None


class CustomStateBackend(StateBackend):
    """PyFlink's wrapper of a Java state backend object. fluvial has no JVM, so there is nothing to wrap:
    constructing one is an error that names the backends there are."""

    __slots__ = ()

    def __init__(self, j_custom_state_backend: Any = None) -> None:
        raise InvalidJobError(
            "CustomStateBackend wraps a Java state backend, and fluvial runs no JVM; use HashMapStateBackend() "
            "or EmbeddedRocksDBStateBackend()"
        )


def _rebuild_rocksdb(
    incremental: bool, paths: tuple[str, ...], threads: int, profile: str = "DEFAULT"
) -> EmbeddedRocksDBStateBackend:
    backend = EmbeddedRocksDBStateBackend(incremental)
    backend._db_storage_paths = tuple(paths)
    backend._number_of_transfer_threads = threads
    backend._predefined_options = PredefinedOptions[profile]
    return backend


def state_backend_from_configuration(configuration: Configuration) -> StateBackend:
    """The backend named by `state.backend.type` (`hashmap`, the default, or `rocksdb`, with its
    `state.backend.rocksdb.predefined-options` profile)."""
    kind = configuration.get("state.backend.type")
    if kind != "rocksdb":
        return HashMapStateBackend()
    backend = EmbeddedRocksDBStateBackend()
    backend.set_predefined_options(
        PredefinedOptions[configuration.get("state.backend.rocksdb.predefined-options").upper()]
    )
    return backend


@dataclass(frozen=True)
class ChangelogSettings:
    """The `state.changelog.*` keys of a job, checked (FLIP-158's options, Flink's names and defaults)."""

    storage: str = "memory"  # "memory": changes inline in the checkpoint; "filesystem": files under base_path
    base_path: str | None = None
    periodic_materialize: bool = True
    materialize_interval_ms: int = 600_000
    max_failures_allowed: int = 3
    compression: bool = False
    upload_max_attempts: int = 3
    upload_retry_delay_ms: int = 500

    @staticmethod
    def of(configuration: Configuration) -> ChangelogSettings:
        """The settings the configuration holds; ConfigurationError when the filesystem storage has no base
        path."""
        storage = configuration.get("state.changelog.storage")
        base_path = configuration.get("state.changelog.dstl.dfs.base-path")
        if storage == "filesystem" and not base_path:
            raise ConfigurationError(
                "state.changelog.storage is filesystem but state.changelog.dstl.dfs.base-path is not set: set it to "
                "a directory (a local path or an fsspec URL) every TaskManager can write and read"
            )
        return ChangelogSettings(
            storage=storage,
            base_path=normalise_path(base_path) if base_path else None,
            periodic_materialize=configuration.get("state.changelog.periodic-materialize.enabled"),
            materialize_interval_ms=configuration.get("state.changelog.periodic-materialize.interval"),
            max_failures_allowed=configuration.get("state.changelog.max-failures-allowed"),
            compression=configuration.get("state.changelog.dstl.dfs.compression.enabled"),
            upload_max_attempts=configuration.get("state.changelog.dstl.dfs.upload.max-attempts"),
            upload_retry_delay_ms=configuration.get("state.changelog.dstl.dfs.upload.next-attempt-delay"),
        )


class ChangelogStateBackend(StateBackend):
    """The changelog state backend (Flink's ChangelogStateBackend, FLIP-158) around the job's keyed backend
    (`delegate`: a HashMapStateBackend or EmbeddedRocksDBStateBackend description). Not built by users: it is
    what `env.enable_changelog_state_backend(True)` (`state.changelog.enabled`) makes of the job's backend.
    Each task builds `fluvial.state.changelog.ChangelogKeyedStateBackend` from it."""

    __slots__ = ("_delegate", "_settings")

    def __init__(self, delegate: StateBackend, settings: ChangelogSettings | None = None) -> None:
        if isinstance(delegate, ChangelogStateBackend):
            delegate = delegate.get_delegated_state_backend()
        if not isinstance(delegate, (HashMapStateBackend, EmbeddedRocksDBStateBackend)):
            raise InvalidJobError(
                f"the changelog state backend wraps a HashMapStateBackend or an EmbeddedRocksDBStateBackend, got "
                f"{type(delegate).__name__}"
            )
        self._delegate = delegate
        self._settings = settings or ChangelogSettings()

    def __reduce__(self) -> tuple[Any, ...]:
        return (ChangelogStateBackend, (self._delegate, self._settings))

    def get_delegated_state_backend(self) -> StateBackend:
        """The keyed backend whose state changes are logged."""
        return self._delegate

    def get_settings(self) -> ChangelogSettings:
        return self._settings
