"""The receivers a TaskManager supervises (DESIGN 2.5): per job and receiver stream, its supervisor, block
handler and ReceiverTracker. A stream's services start when the first task reading it is deployed on the
TaskManager, outlive failovers of the job's tasks (the restored task finds them again and replays from its
checkpointed position), and stop when the JobMaster releases the job. Receiver source readers reach them
through their SourceReaderContext (`TaskManagerReceivers.for_job`), never through a global registry."""

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


class TaskManagerReceivers:
    """Every receiver stream running on one TaskManager, by (job id, stream id). Thread-safe."""

    def __init__(self) -> None:
        self._streams: dict[tuple[str, int], ReceiverServices] = {}
        self._lock = threading.Lock()

    def for_job(self, job_id: str, settings: ReceiverSettings) -> "JobReceivers":
        return JobReceivers(self, job_id, settings)

    def stream(self, job_id: str, stream_id: int, receiver: Any, settings: ReceiverSettings) -> ReceiverServices:
        with self._lock:
            services = self._streams.get((job_id, stream_id))
            if services is None:
                services = self._streams[(job_id, stream_id)] = start_receiver_stream(
                    job_id, stream_id, receiver, settings)
            return services

    def services(self, job_id: str) -> list[ReceiverServices]:
        with self._lock:
            return [services for (job, _), services in self._streams.items() if job == job_id]

    def release_job(self, job_id: str) -> None:
        """The job has ended: stop its receivers (everything they stored is released with them)."""
        with self._lock:
            ended = [key for key in self._streams if key[0] == job_id]
            stopping = [self._streams.pop(key) for key in ended]
        for services in stopping:
            services.stop()

    def shutdown(self) -> None:
        with self._lock:
            stopping, self._streams = list(self._streams.values()), {}
        for services in stopping:
            services.stop()


class JobReceivers:
    """One job's view of its TaskManager's receivers (what a receiver source reader gets: ReceiverStreams)."""

    __slots__ = ("_receivers", "_job_id", "_settings")

    def __init__(self, receivers: TaskManagerReceivers, job_id: str, settings: ReceiverSettings) -> None:
        self._receivers = receivers
        self._job_id = job_id
        self._settings = settings

    def stream(self, stream_id: int, receiver: Any) -> ReceiverServices:
        return self._receivers.stream(self._job_id, stream_id, receiver, self._settings)


def start_receiver_stream(job_id: str, stream_id: int, receiver: Any, settings: ReceiverSettings) -> ReceiverServices:
    """Create the stream's tracker, block handler and supervisor, and start its receiver. Its write-ahead logs
    (when on) live under `<checkpoint dir>/<job id>/`, one directory per stream."""
    wal_root = settings.wal_directory
    tracker_wal = os.path.join(wal_root, job_id, "receivedBlockMetadata", str(stream_id)) if wal_root else None
    tracker = ReceiverTracker({stream_id: receiver}, tracker_wal)
    if tracker.wal_enabled:
        tracker.recover()  # the blocks an earlier run of this stream tracked (none for a new job)
    services = ReceiverServices(tracker, {}, {}, settings.checkpointing)
    store = BlockStore()
    if wal_root:
        wal = WriteAheadLog(os.path.join(wal_root, job_id, "receivedData", str(stream_id)))
        services.wals.append(wal)
        handler: Any = WriteAheadLogBasedBlockHandler(store, wal, settings.block_store_timeout_s)
    else:
        handler = BlockManagerBasedBlockHandler(store)
    services.handlers[stream_id] = handler
    supervisor = services.supervisors[stream_id] = ReceiverSupervisor(
        receiver, stream_id, handler, tracker.add_block, services._mark_ended,
        settings.block_interval_s, settings.block_queue_size, settings.max_rate)
    supervisor.start()
    return services


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
