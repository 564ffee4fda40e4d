"""The NATS sink's writer and its commit.

EXACTLY_ONCE, numbered:
1. `write_batch` serializes each record and keeps (subject, payload) in the checkpoint's buffer.
2. At the barrier, `prepare_commit` turns the buffer into one NatsCommittable whose messages get the ids
   `<job id>-<subtask>-<checkpoint number>-<position>`; the checkpoint number counts this writer's checkpoints
   and is kept in its state, so ids never repeat within a job's history.
3. When the checkpoint completes, `NatsSink.commit` publishes every message with its `Nats-Msg-Id` and waits
   for each acknowledgement; a failed or timed-out publish is retried (the server drops what it already
   stored), and past the retry deadline the job fails and is restored.
4. After a restore, the runtime commits the checkpoint's committables again: the stream's duplicate window
   (`duplicate_window` of the stream, 2 minutes by default) drops every message published before, as long as
   the restore comes within the window after the first publish.
AT_LEAST_ONCE publishes at once and waits for every acknowledgement in `flush` (at each barrier); NONE
publishes without asking for acknowledgements and only flushes the connection at each barrier.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import ResourceError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.nats import NatsCommittable, NatsSink, NatsSinkSettings
from fluvial.datastream.connectors.nats_connection import NatsConnection
from fluvial.datastream.connectors.sink import SinkWriter

logger = logging.getLogger(__name__)

MSG_ID = "Nats-Msg-Id"
COMMIT_ATTEMPTS = 5
_WRITERS: dict[int, NatsSinkWriter] = {}  # id(sink) -> its live writer, whose connection commit uses


@dataclass(frozen=True, slots=True)
class NatsWriterState:
    """The number the writer's next checkpoint gets (step 2)."""

    subtask_index: int
    next_checkpoint_number: int


class NatsSinkWriter(SinkWriter):
    def __init__(
        self,
        settings: NatsSinkSettings,
        task_info: TaskInfo,
        restored_state: list[Any] | None,
        sink: NatsSink | None = None,
    ) -> None:
        self._settings = settings
        self._prefix = f"{task_info.job_id}-{task_info.subtask_index}"
        self._subtask = task_info.subtask_index
        self._number = max((s.next_checkpoint_number for s in restored_state or ()), default=0)
        self._buffer: list[tuple[str, bytes]] = []
        self._pending: list[asyncio.Future] = []
        self._what = f"NATS sink ({task_info.task_name_with_subtasks})"
        self._guarantee = settings.guarantee
        settings.serializer.open()
        self.connection = NatsConnection.open(settings.connection, self._what)
        self._sink_id = id(sink) if sink is not None else None
        if self._sink_id is not None:
            _WRITERS[self._sink_id] = self

    def _messages(self, values: list) -> list[tuple[str, bytes]]:
        serialize = self._settings.serializer.serialize
        subject = self._settings.subject
        if subject is not None:
            return [(subject, serialize(value)) for value in values]
        select = self._settings.subject_selector
        return [(select(value), serialize(value)) for value in values]

    def write_batch(self, values: list) -> None:
        messages = self._messages(values)
        if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            self._buffer.extend(messages)
        elif self._guarantee is DeliveryGuarantee.AT_LEAST_ONCE:
            js = self.connection.jetstream
            self._pending.append(self.connection.submit(lambda: _publish_async(js, messages, None)))
        else:
            client = self.connection.client
            self.connection.submit(lambda: _publish_core(client, messages))

    def flush(self, end_of_input: bool) -> None:
        """AT_LEAST_ONCE: every message published so far is acknowledged when this returns. NONE: what was
        published has reached the server (no acknowledgement asked for)."""
        if self._guarantee is DeliveryGuarantee.NONE:
            client = self.connection.client
            self.connection.call(lambda: client.flush(self._settings.connection.request_timeout))
            return
        pending, self._pending = self._pending, []
        timeout = self._settings.connection.request_timeout
        for future in pending:
            acks = future.result(timeout * 2)
            self.connection.call(lambda acks=acks: _await_acks(acks, self._settings, timeout), timeout * 2)

    def prepare_commit(self) -> list[Any]:
        if not self._buffer:
            return []
        committable = NatsCommittable(f"{self._prefix}-{self._number}", tuple(self._buffer))
        self._number += 1
        self._buffer = []
        return [committable]

    def snapshot_state(self) -> list[Any]:
        return [NatsWriterState(self._subtask, self._number)]

    def close(self) -> None:
        if self._sink_id is not None and _WRITERS.get(self._sink_id) is self:
            del _WRITERS[self._sink_id]
        self.connection.close()


def publish_committables(sink: NatsSink, committables: list[NatsCommittable]) -> None:
    """Step 3 (and 4) of the module docstring, on the task thread."""
    if not committables:
        return
    writer = _WRITERS.get(id(sink))
    connection = (
        writer.connection if writer is not None else NatsConnection.open(sink.settings.connection, "NATS sink commit")
    )
    try:
        for committable in committables:
            _commit_one(connection, sink.settings, committable)
    finally:
        if writer is None:
            connection.close()


def _commit_one(connection: NatsConnection, settings: NatsSinkSettings, committable: NatsCommittable) -> None:
    timeout = settings.connection.request_timeout
    js = connection.jetstream
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        started = time.monotonic()
        try:
            acks = connection.call(
                lambda: _publish_async(js, committable.messages, committable.msg_id_prefix), timeout * 2
            )
            connection.call(lambda acks=acks: _await_acks(acks, settings, timeout), timeout * 2)
            return
        except ResourceError:
            raise
        except Exception as error:  # noqa: BLE001 - retried: the ids make a repeat harmless
            if attempt == COMMIT_ATTEMPTS:
                raise ResourceError(
                    f"NATS sink could not publish checkpoint {committable.msg_id_prefix} "
                    f"({len(committable.messages)} messages) to {settings.connection.address} after {attempt} "
                    f"attempts: {type(error).__name__}: {error}"
                ) from error
            logger.warning(
                "NATS sink: publishing %r failed (%s: %s); retrying", committable, type(error).__name__, error
            )
            time.sleep(max(0.0, 0.5 - (time.monotonic() - started)))


async def _publish_async(js: Any, messages: Any, msg_id_prefix: str | None) -> list[asyncio.Future]:
    if msg_id_prefix is None:
        return [await js.publish_async(subject, payload) for subject, payload in messages]
    return [
        await js.publish_async(subject, payload, headers={MSG_ID: f"{msg_id_prefix}-{position}"})
        for position, (subject, payload) in enumerate(messages)
    ]


async def _await_acks(acks: list[asyncio.Future], settings: NatsSinkSettings, timeout: float) -> None:
    import nats.errors
    import nats.js.errors

    try:
        await asyncio.wait_for(asyncio.gather(*acks), timeout)
    except (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError) as error:
        raise ResourceError(
            f"NATS sink: no JetStream stream on {settings.connection.address} stores subject "
            f"{settings.subject or '(selected)'!r}; create a stream whose subjects include it"
        ) from error
    finally:
        for ack in acks:
            if not ack.done():
                ack.cancel()


async def _publish_core(client: Any, messages: list[tuple[str, bytes]]) -> None:
    for subject, payload in messages:
        await client.publish(subject, payload)
