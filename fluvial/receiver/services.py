"""A job's receivers in this process: their supervisors, block handlers and the ReceiverTracker, started when
the job starts and stopped when it ends — so they outlive failovers of the job's tasks. Receiver source tasks
find them by job id (in thread mode they share the process with the JobMaster)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from fluvial.common.errors import ConfigurationError
from fluvial.receiver.handler import BlockManagerBasedBlockHandler, BlockStore, WriteAheadLogBasedBlockHandler
from fluvial.receiver.supervisor import ReceiverSupervisor
from fluvial.receiver.tracker import ReceiverTracker
from fluvial.receiver.wal import WriteAheadLog


@dataclass(frozen=True, slots=True)
class ReceiverSettings:
    block_interval_s: float
    block_queue_size: int
    max_rate: float
    wal_directory: str | None  # set when the write-ahead log is on
    checkpointing: bool
    block_store_timeout_s: float = 30.0


@dataclass
class ReceiverServices:
    tracker: ReceiverTracker
    handlers: dict[int, Any]
    supervisors: dict[int, ReceiverSupervisor]
    checkpointing: bool
    ended: set[int] = field(default_factory=set)
    wals: list[WriteAheadLog] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def stream_ended(self, stream_id: int) -> bool:
        with self.lock:
            return stream_id in self.ended

    def stream_failure(self, stream_id: int) -> tuple[str, BaseException] | None:
        """(message, error) when the stream's receiver was stopped with an error, else None."""
        supervisor = self.supervisors[stream_id]
        return None if supervisor.stop_error is None else (supervisor.stop_message or "", supervisor.stop_error)

    def _mark_ended(self, stream_id: int) -> None:
        with self.lock:
            self.ended.add(stream_id)

    def release_through(self, stream_id: int, position: int, time_ms: int) -> None:
        """Blocks up to `position` are no longer needed (emitted and checkpointed): drop them from the block
        store, and WAL segments older than every block still tracked."""
        removed = self.tracker.mark_checkpointed(stream_id, position, time_ms)
        handler = self.handlers[stream_id]
        handler.store.remove_all(info.block_id for info in removed)
        threshold = self.tracker.wal_clean_threshold_ms(stream_id)
        if threshold is not None:
            handler.cleanup_old_blocks(threshold)

    def stop(self) -> None:
        for supervisor in self.supervisors.values():
            supervisor.stop("the job ended")
        for handler in self.handlers.values():
            handler.close()
        for wal in self.wals:
            wal.close()
        self.tracker.stop()


_REGISTRY: dict[str, ReceiverServices] = {}
_REGISTRY_LOCK = threading.Lock()


def lookup(job_id: str) -> ReceiverServices:
    with _REGISTRY_LOCK:
        services = _REGISTRY.get(job_id)
    if services is None:
        raise RuntimeError(f"job {job_id} has no receivers running in this process")
    return services


def start_receivers(job_id: str, receivers: dict[int, Any], settings: ReceiverSettings) -> ReceiverServices:
    """Create the tracker, a handler and a supervisor per stream, register them, start every receiver."""
    wal_root = settings.wal_directory
    tracker_wal = os.path.join(wal_root, job_id, "receivedBlockMetadata") if wal_root else None
    tracker = ReceiverTracker(receivers, tracker_wal)
    if tracker.wal_enabled:
        tracker.recover()  # the blocks an earlier JobMaster of this job tracked (none for a new job)
    services = ReceiverServices(tracker, {}, {}, settings.checkpointing)
    store = BlockStore()
    for stream_id, receiver in receivers.items():
        if wal_root:
            wal = WriteAheadLog(os.path.join(wal_root, job_id, "receivedData", str(stream_id)))
            services.wals.append(wal)
            handler: Any = WriteAheadLogBasedBlockHandler(store, wal, settings.block_store_timeout_s)
        else:
            handler = BlockManagerBasedBlockHandler(store)
        services.handlers[stream_id] = handler
        services.supervisors[stream_id] = ReceiverSupervisor(
            receiver, stream_id, handler, tracker.add_block, services._mark_ended,
            settings.block_interval_s, settings.block_queue_size, settings.max_rate)
    with _REGISTRY_LOCK:
        _REGISTRY[job_id] = services
    for supervisor in services.supervisors.values():
        supervisor.start()
    return services


def stop_receivers(job_id: str) -> None:
    with _REGISTRY_LOCK:
        services = _REGISTRY.pop(job_id, None)
    if services is not None:
        services.stop()


def receiver_settings(configuration: Any, checkpoints: Any) -> ReceiverSettings:
    """From `receiver.*` keys; the write-ahead log needs a local checkpoint directory (a clear error if none)."""
    wal_on = bool(configuration.get("receiver.write-ahead-log.enable")) if configuration is not None else False
    interval_ms = configuration.get("receiver.block-interval") if configuration is not None else 200
    queue_size = configuration.get("receiver.block-queue-size") if configuration is not None else 10
    max_rate = configuration.get("receiver.max-rate") if configuration is not None else 0
    if interval_ms <= 0:
        raise ConfigurationError(f"receiver.block-interval must be > 0 ms, got {interval_ms}: e.g. '200 ms'")
    wal_directory = None
    if wal_on:
        path = _local_checkpoint_dir(checkpoints)
        if path is None:
            raise ConfigurationError(
                "receiver.write-ahead-log.enable is true but the job has no checkpoint directory: set "
                "state.checkpoints.dir (a local path or file:// URL) or "
                "env.get_checkpoint_config().set_checkpoint_storage_dir(...)"
            )
        wal_directory = path
    enabled = checkpoints is not None and checkpoints.enabled
    timeout_ms = configuration.get("receiver.block-store-timeout") if configuration is not None else 30_000
    if timeout_ms <= 0:
        raise ConfigurationError(f"receiver.block-store-timeout must be > 0, got {timeout_ms} ms: e.g. '30 s'")
    return ReceiverSettings(interval_ms / 1000, queue_size, max_rate, wal_directory, enabled, timeout_ms / 1000)


def _local_checkpoint_dir(checkpoints: Any) -> str | None:
    storage = getattr(checkpoints, "storage", None) if checkpoints is not None else None
    path = storage.get_checkpoint_path() if storage is not None and hasattr(storage, "get_checkpoint_path") else None
    if not path:
        return None
    if "://" in path:
        parsed = urlparse(path)
        if parsed.scheme not in ("file", "local"):
            return None
        path = unquote(parsed.path)
    return path
