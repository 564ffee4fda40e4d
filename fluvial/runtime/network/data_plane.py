"""A process's end of the data plane: where its tasks' remote channels come from.

Connections are per pair of processes, not per channel: a producer process opens one authenticated connection
to each consumer process it sends to and multiplexes its channels over it (Flink's TCP connection per
TaskManager pair). On each connection one reader thread per side: the consumer's routes DATA and BUFFER frames to its
RemoteInputChannels (creating a channel when data arrives before its task is deployed), the producer's routes
CREDIT frames to its RemoteOutputChannels. When a connection dies, every channel it fed that had not ended
gets a ChannelBroken, so its task fails rather than waits.

`ProcessChannels` is what a TaskManager hands its tasks: for a channel whose other end is a subtask of the
same process, a LocalChannel (never serialized); else a remote end.
"""

from __future__ import annotations

import logging
import pickle
import threading
from typing import Any

from fluvial.runtime.channels import DEFAULT_CAPACITY, ChannelRegistry
from fluvial.runtime.network.connection import DEFAULT_BIND_HOST, Address, Connection, Listener, connect
from fluvial.runtime.network.framing import FrameKind
from fluvial.runtime.network.remote_channels import (
    CHANNEL_HEADER,
    DataConnectionLost,
    RemoteInputChannel,
    RemoteOutputChannel,
)

logger = logging.getLogger(__name__)


class DataPlane:
    def __init__(
        self, secret: bytes, name: str, bind_host: str = DEFAULT_BIND_HOST, capacity: int = DEFAULT_CAPACITY
    ) -> None:
        self._secret = secret
        self.name = name
        self.capacity = capacity
        self._inputs: dict[Any, RemoteInputChannel] = {}
        self._outputs: dict[Any, RemoteOutputChannel] = {}
        self._connections: dict[Address, Connection] = {}
        self._inbound: list[Connection] = []
        self._lock = threading.Lock()
        self._released_before: dict[str, int] = {}  # job id → its attempts below this are released
        self._listener = Listener(secret, self._on_inbound, f"{name}-data", bind_host)
        self.address: Address = self._listener.address

    # -- channels -------------------------------------------------------------------------------------------------

    def input_channel(self, channel_id: Any) -> RemoteInputChannel:
        channel = self._inputs.get(channel_id)
        if channel is None:
            channel = self._inputs.setdefault(channel_id, RemoteInputChannel(channel_id, self.capacity))
        return channel

    def output_channel(self, channel_id: Any, address: Address) -> RemoteOutputChannel:
        channel = self._outputs.get(channel_id)
        if channel is None:
            channel = self._outputs.setdefault(
                channel_id, RemoteOutputChannel(channel_id, self._connection_to(address), self.capacity)
            )
        return channel

    def release_attempts_before(self, job_id: str, attempt: int) -> None:
        """Forget the channels of `job_id`'s older attempts; late frames for them are dropped."""
        with self._lock:
            self._released_before[job_id] = max(self._released_before.get(job_id, 0), attempt)
        for registry in (self._inputs, self._outputs):
            for channel_id in [cid for cid in registry if cid.job_id == job_id and cid.attempt < attempt]:
                registry.pop(channel_id, None)

    # -- connections ----------------------------------------------------------------------------------------------

    def _connection_to(self, address: Address) -> Connection:
        with self._lock:
            connection = self._connections.get(address)
            if connection is not None and not connection.closed:
                return connection
            connection = self._connections[address] = connect(address, self._secret)
        threading.Thread(
            target=self._read_credits, args=(connection,), name=f"{self.name}-credits", daemon=True
        ).start()
        return connection

    def _read_credits(self, connection: Connection) -> None:
        try:
            while (frame := connection.read()) is not None:
                kind, payload = frame
                if kind is FrameKind.CREDIT:
                    channel_id, count, *buffer_size = pickle.loads(payload)  # a debloated size rides along
                    channel = self._outputs.get(channel_id)
                    if channel is not None:
                        channel.grant(count, *buffer_size)
                elif kind is FrameKind.CLOSE:
                    break
        except (OSError, ConnectionError, pickle.UnpicklingError) as error:
            if not connection.closed:
                logger.debug("%s: the data connection to %s ended: %s", self.name, connection.peer, error)
        finally:
            connection.close()

    def _on_inbound(self, connection: Connection) -> None:
        """A producer process connected (on the listener's handshake thread): serve it here."""
        with self._lock:
            self._inbound.append(connection)
        fed: set[Any] = set()
        released = self._released_before
        channel_ids: dict[bytes, Any] = {}  # a BUFFER frame's channel header -> its channel id
        header_size = CHANNEL_HEADER.size
        error: BaseException = DataConnectionLost(f"the data connection from {connection.peer} closed")
        try:
            while (frame := connection.read()) is not None:
                kind, payload = frame
                if kind is FrameKind.BUFFER:
                    end = header_size + CHANNEL_HEADER.unpack_from(payload)[0]
                    header = payload[:end]
                    channel_id = channel_ids.get(header)
                    if channel_id is None:
                        channel_id = channel_ids[header] = pickle.loads(payload[header_size:end])
                    if channel_id.attempt < released.get(channel_id.job_id, 0):
                        continue  # a late frame of a released attempt, or of a job that ended
                    fed.add(channel_id)
                    self.input_channel(channel_id).deliver_buffer(memoryview(payload)[end:], connection, len(payload))
                elif kind is FrameKind.DATA:
                    channel_id, item = pickle.loads(payload)
                    if channel_id.attempt < released.get(channel_id.job_id, 0):
                        continue  # a late frame of a released attempt, or of a job that ended
                    fed.add(channel_id)
                    self.input_channel(channel_id).deliver(item, connection, len(payload))
                elif kind is FrameKind.CLOSE:
                    break
        except (OSError, ConnectionError, pickle.UnpicklingError) as failure:
            error = DataConnectionLost(f"the data connection from {connection.peer} failed: {failure}")
        finally:
            connection.close()
            for channel_id in fed:
                channel = self._inputs.get(channel_id)
                if channel is not None:
                    channel.break_with(error)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            connections = list(self._connections.values()) + self._inbound
        for connection in connections:
            connection.close()


class ProcessChannels:
    """The channels of one TaskManager process: local ones for subtasks of this process, remote ends for the
    others. `directory` maps TaskManager index → data-plane address (kept current by the JobMaster)."""

    def __init__(self, data_plane: DataPlane, own_index: int, local: ChannelRegistry | None = None) -> None:
        self.data_plane = data_plane
        self.own_index = own_index
        self.local = local or ChannelRegistry(data_plane.capacity)
        self.directory: dict[int, Address] = {}

    def output_channel(self, channel_id: Any, peer: int) -> Any:
        if peer == self.own_index:
            return self.local.get(channel_id)
        address = self.directory.get(peer)
        if address is None:
            raise ConnectionError(f"no data-plane address is known for TaskManager {peer}")
        return self.data_plane.output_channel(channel_id, address)

    def input_channel(self, channel_id: Any, peer: int) -> Any:
        if peer == self.own_index:
            return self.local.get(channel_id)
        return self.data_plane.input_channel(channel_id)

    def release_attempts_before(self, job_id: str, attempt: int) -> None:
        self.local.release_attempts_before(job_id, attempt)
        self.data_plane.release_attempts_before(job_id, attempt)
