"""The receiver source: the task that emits a receiver stream's tracked blocks, in order, and checkpoints the
position of the last block it emitted. After a failover it resumes after that block — replaying from the
block store, or the write-ahead log — while the receiver keeps receiving. With checkpoints, a block is
released (store and WAL) only once a checkpoint holding a later position completed; without them, once
emitted."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fluvial.common.time import current_millis
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader


RELEASE_INTERVAL_MS = 100  # without checkpoints, emitted blocks are released at most this often

@dataclass(frozen=True)
class ReceiverSplit:
    split_id: str
    stream_id: int
    position: int = -1  # sequence number of the last block emitted (-1: none yet)


class ReceiverSource(Source[ReceiverSplit]):
    def __init__(self, receiver: Any, stream_id: int) -> None:
        self.receiver = receiver
        self.stream_id = stream_id

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[ReceiverSplit]:
        return [ReceiverSplit(f"receiver-{self.stream_id}", self.stream_id)]

    def create_reader(self, task_info: Any) -> "ReceiverSourceReader":
        return ReceiverSourceReader(task_info.job_id)

    def max_parallelism(self) -> int:
        return 1

    def default_name(self) -> str:
        return self.receiver.name()


class ReceiverSourceReader(SourceReader[ReceiverSplit]):
    def __init__(self, job_id: str) -> None:
        self._job_id = job_id
        self._split: ReceiverSplit | None = None
        self._services: Any = None
        self._positions: dict[int, int] = {}  # checkpoint id -> position it holds
        self._last_release = 0

    def add_splits(self, splits: list[ReceiverSplit]) -> None:
        if splits:
            self._split = splits[0]

    def _lookup(self) -> Any:
        if self._services is None:
            from fluvial.receiver.services import lookup

            self._services = lookup(self._job_id)
        return self._services

    def poll(self, max_records: int) -> list | None:
        split = self._split
        if split is None:
            return None
        services = self._lookup()
        ended = services.stream_ended(split.stream_id)  # read before the blocks: no block can follow the end
        blocks = services.tracker.blocks_after(split.stream_id, split.position)
        if not blocks:
            if ended:
                self._raise_if_failed(services, split.stream_id)
                return None
            return []
        info = blocks[0]
        records = services.handlers[split.stream_id].read_block(info.store_result)
        self._split = replace(split, position=split.position + 1)
        if not services.checkpointing:
            now = current_millis()
            if now - self._last_release >= RELEASE_INTERVAL_MS:  # batched: each release logs to the tracker WAL
                self._last_release = now
                services.release_through(split.stream_id, self._split.position, now)
        return list(records)

    @staticmethod
    def _raise_if_failed(services: Any, stream_id: int) -> None:
        """A receiver stopped with an error (e.g. a refused connection) fails the task after its last block,
        so the job fails naming the receiver instead of finishing as if the stream had simply ended."""
        failure = services.stream_failure(stream_id)
        if failure is not None:
            from fluvial.receiver.receiver import ReceiverStoppedError

            message, error = failure
            name = services.supervisors[stream_id].receiver.name()
            raise ReceiverStoppedError(f"receiver '{name}' (stream {stream_id}) stopped with an error: {message}") \
                from error

    def snapshot_state(self) -> list[ReceiverSplit]:
        return [self._split] if self._split is not None else []

    def on_snapshot(self, checkpoint_id: int) -> None:
        if self._split is not None:
            self._positions[checkpoint_id] = self._split.position

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = [cid for cid in self._positions if cid <= checkpoint_id]
        if not done or self._split is None:
            return
        position = max(self._positions[cid] for cid in done)
        for cid in done:
            del self._positions[cid]
        if position >= 0:
            self._lookup().release_through(self._split.stream_id, position, current_millis())
