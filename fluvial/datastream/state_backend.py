"""How working state is kept (PyFlink `pyflink.datastream.state_backend`): picklable descriptions only.

A description is set with `env.set_state_backend(...)`, travels with the job, and each task builds its live
keyed state backend from it at open (fluvial.state.heap for HashMapStateBackend, fluvial.state.rocksdb for
EmbeddedRocksDBStateBackend). Where checkpoints are written is a separate choice (checkpoint_storage).
"""

from __future__ import annotations

import enum
import os
from typing import Any

from fluvial.common.configuration import Configuration
from fluvial.common.errors import InvalidJobError

__all__ = [
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
    """Flink's RocksDB option profiles. fluvial's RocksDB backend runs with rocksdict's defaults, which is
    Flink's DEFAULT profile; the tuned profiles are refused until the backend applies them."""

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

    __slots__ = ("_db_storage_paths", "_enable_incremental_checkpointing", "_number_of_transfer_threads")

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

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_rocksdb, (self._enable_incremental_checkpointing, self._db_storage_paths,
                                   self._number_of_transfer_threads))

    def is_incremental_checkpointing_enabled(self) -> bool:
        """Whether checkpoints upload only the RocksDB files new since the last one."""
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
            cleaned.append(path.removeprefix("file://"))
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
        """Choose a RocksDB options profile. Only DEFAULT is supported.

        Args:
            options: A PredefinedOptions.

        Raises:
            InvalidJobError: `options` is not a PredefinedOptions.
            NotYetSupportedError: a profile other than DEFAULT.
        """
        if not isinstance(options, PredefinedOptions):
            raise InvalidJobError(f"set_predefined_options takes a PredefinedOptions, got {options!r}")
        if options is not PredefinedOptions.DEFAULT:
            from fluvial.common.errors import NotYetSupportedError

            raise NotYetSupportedError(
                f"RocksDB profile {options.name} is not supported yet: fluvial's RocksDB backend runs with the "
                "DEFAULT options; remove the call or pass PredefinedOptions.DEFAULT"
            )

    def get_predefined_options(self) -> PredefinedOptions:
        """The RocksDB options profile: DEFAULT."""
        return PredefinedOptions.DEFAULT


class CustomStateBackend(StateBackend):
    """PyFlink's wrapper of a Java state backend object. fluvial has no JVM, so there is nothing to wrap:
    constructing one is an error that names the backends there are."""

    __slots__ = ()

    def __init__(self, j_custom_state_backend: Any = None) -> None:
        raise InvalidJobError(
            "CustomStateBackend wraps a Java state backend, and fluvial runs no JVM; use HashMapStateBackend() "
            "or EmbeddedRocksDBStateBackend()"
        )


def _rebuild_rocksdb(incremental: bool, paths: tuple[str, ...], threads: int) -> EmbeddedRocksDBStateBackend:
    backend = EmbeddedRocksDBStateBackend(incremental)
    backend._db_storage_paths = tuple(paths)
    backend._number_of_transfer_threads = threads
    return backend


def state_backend_from_configuration(configuration: Configuration) -> StateBackend:
    """The backend named by `state.backend.type` (`hashmap`, the default, or `rocksdb`)."""
    kind = configuration.get("state.backend.type")
    return EmbeddedRocksDBStateBackend() if kind == "rocksdb" else HashMapStateBackend()
