"""The receivers a TaskManager supervises (DESIGN 2.5): per job and receiver stream, its supervisor, block
handler and ReceiverTracker. A stream's services start when the first task reading it is deployed on the
TaskManager, outlive failovers of the job's tasks (the restored task finds them again and replays from its
checkpointed position), and stop when the JobMaster releases the job. A receiver that gave up (stopped with an
error once its restart strategy allowed no more restarts) is not left stopped: the restored task finds the
stream with a new supervisor and a fresh restart budget, the blocks the old one stored kept — otherwise every
restart of the job would fail at once with the same error, and the job would never recover once the upstream
is back. Receiver source readers reach them
through their SourceReaderContext (`TaskManagerReceivers.for_job`), never through a global registry.

Write-ahead logs outlive the process, so a later run restored from a checkpoint finds them again. A stream's
log (the receiver's data and its tracker's events) lives in a directory keyed by what stays the same between
runs — the receiver source's operator id (its uid, else its position in the job) and the stream's index —
under the checkpoint directory, one generation per run that started it fresh:
`<checkpoint dir>/receivers/<operator id>-<stream>/<id of the job that started it>/`. The source's checkpointed
split names its log directory and its position, so a run restored from that checkpoint (a new job id) reads
the same log, recovers the tracker's numbering from it, replays every block stored after the checkpoint and
appends its own blocks there. A fresh run starts a generation of its own: it never replays, nor deletes, what
an earlier run left (restore from that run's checkpoint to replay it)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from fluvial.common.errors import ConfigurationError
from fluvial.receiver.handler import BlockManagerBasedBlockHandler, BlockStore, WriteAheadLogBasedBlockHandler
from fluvial.receiver.supervisor import ReceiverState, ReceiverSupervisor
from fluvial.receiver.tracker import ReceiverTracker
from fluvial.receiver.wal import WriteAheadLog

_log = logging.getLogger(__name__)


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
    log_directory: str | None = None  # where the stream's write-ahead logs live (None: the log is off)

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

    def revive(self, stream_id: int, receiver: Any, settings: ReceiverSettings) -> bool:
        """Give the stream a new supervisor if its receiver stopped with an error (see the module docstring);
        whether it did. Waits (bounded) until the old one's last blocks are tracked, so none is lost or reordered."""
        old = self.supervisors[stream_id]
        if receiver is None or settings is None or old.stop_error is None or old.state is not ReceiverState.STOPPED:
            return False  # (a reader without its receiver only reads a stream that runs: unit tests)
        if not old.finished.wait(settings.block_store_timeout_s):
            _log.warning(
                "receiver stream %s: the stopped receiver has not finished storing its blocks after "
                "%.0f s; it is not restarted yet",
                stream_id,
                settings.block_store_timeout_s,
            )
            return False
        _log.info(
            "receiver %s (stream %s) stopped with an error (%s); the restored task starts it again with a "
            "fresh restart budget",
            receiver.name(),
            stream_id,
            old.stop_message,
        )
        with self.lock:
            self.ended.discard(stream_id)
        supervisor = self.supervisors[stream_id] = new_supervisor(self, stream_id, receiver, settings)
        supervisor.start()
        return True

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

    def for_job(self, job_id: str, settings: ReceiverSettings) -> JobReceivers:
        return JobReceivers(self, job_id, settings)

    def stream(
        self,
        job_id: str,
        stream_id: int,
        receiver: Any,
        settings: ReceiverSettings,
        operator_id: str = "",
        log_directory: str | None = None,
        upstream_position: Any = None,
    ) -> ReceiverServices:
        with self._lock:
            services = self._streams.get((job_id, stream_id))
            if services is None:
                services = self._streams[(job_id, stream_id)] = start_receiver_stream(
                    job_id, stream_id, receiver, settings, operator_id, log_directory, upstream_position
                )
            else:
                services.revive(stream_id, receiver, settings)
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

    def stream(
        self,
        stream_id: int,
        receiver: Any,
        operator_id: str = "",
        log_directory: str | None = None,
        upstream_position: Any = None,
    ) -> ReceiverServices:
        return self._receivers.stream(
            self._job_id, stream_id, receiver, self._settings, operator_id, log_directory, upstream_position
        )


def stream_log_directory(wal_root: str, operator_id: str, stream_id: int, job_id: str) -> str:
    """The log directory a fresh run of a stream starts (see the module docstring)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", operator_id or "receiver")[:100]
    if name != operator_id:
        name += "-" + hashlib.sha256(operator_id.encode()).hexdigest()[:8]  # distinct ids stay distinct
    return os.path.join(wal_root, "receivers", f"{name}-{stream_id}", job_id)


def start_receiver_stream(
    job_id: str,
    stream_id: int,
    receiver: Any,
    settings: ReceiverSettings,
    operator_id: str = "",
    log_directory: str | None = None,
    upstream_position: Any = None,
) -> ReceiverServices:
    """Create the stream's tracker, block handler and supervisor, and start its receiver. With the write-ahead
    log on, its logs live in `log_directory` — the one a restored checkpoint names — or in a new generation
    directory of this run; the tracker recovers the blocks an earlier run logged there."""
    wal_root = settings.wal_directory
    if log_directory is not None and not wal_root:
        _log.warning(
            "stream %s does not read the write-ahead log %s that its checkpoint names: the log is off "
            "(receiver.write-ahead-log.enable); blocks stored after that checkpoint are not replayed",
            stream_id,
            log_directory,
        )
        log_directory = None
    if wal_root and log_directory is None:
        log_directory = stream_log_directory(wal_root, operator_id, stream_id, job_id)
    tracker_wal = os.path.join(log_directory, "receivedBlockMetadata") if log_directory else None
    tracker = ReceiverTracker({stream_id: receiver}, tracker_wal)
    if tracker.wal_enabled:
        recovered = tracker.recover()  # the blocks an earlier run of this stream logged (none for a new one)
        if recovered:
            _log.info("stream %s recovered %d blocks from its write-ahead log %s", stream_id, recovered, log_directory)
    if upstream_position is not None:  # before the receiver starts: its on_start may ask for it at once
        tracker.seed_position(stream_id, upstream_position)
    services = ReceiverServices(tracker, {}, {}, settings.checkpointing, log_directory=log_directory)
    store = BlockStore()
    if log_directory:
        wal = WriteAheadLog(os.path.join(log_directory, "receivedData"))
        services.wals.append(wal)
        handler: Any = WriteAheadLogBasedBlockHandler(store, wal, settings.block_store_timeout_s)
    else:
        handler = BlockManagerBasedBlockHandler(store)
    services.handlers[stream_id] = handler
    supervisor = services.supervisors[stream_id] = new_supervisor(services, stream_id, receiver, settings)
    supervisor.start()
    return services


def new_supervisor(
    services: ReceiverServices, stream_id: int, receiver: Any, settings: ReceiverSettings
) -> ReceiverSupervisor:
    return ReceiverSupervisor(
        receiver,
        stream_id,
        services.handlers[stream_id],
        services.tracker.add_block,
        services._mark_ended,
        settings.block_interval_s,
        settings.block_queue_size,
        settings.max_rate,
        lambda: services.tracker.last_position(stream_id),
    )


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
