"""Synchronous helpers over nats-py for the NATS connector tests: streams, publishing, reading a stream whole."""

from __future__ import annotations

import asyncio
from typing import Any, Iterable


def run(coroutine_factory) -> Any:  # type: ignore[no-untyped-def]
    return asyncio.run(coroutine_factory())


async def _connect(url: str) -> Any:
    import nats

    return await nats.connect(url, connect_timeout=5, max_reconnect_attempts=10)


def create_stream(url: str, name: str, subjects: list[str], **config: Any) -> None:
    """(Re)create stream `name` empty."""
    async def go() -> None:
        from nats.js.api import StreamConfig

        nc = await _connect(url)
        js = nc.jetstream()
        try:
            await js.delete_stream(name)
        except Exception:  # noqa: BLE001 - not there yet
            pass
        await js.add_stream(StreamConfig(name=name, subjects=subjects, **config))
        await nc.close()
    run(go)


def publish(url: str, messages: Iterable[tuple[str, bytes]]) -> None:
    async def go() -> None:
        nc = await _connect(url)
        js = nc.jetstream()
        futures = [await js.publish_async(subject, payload) for subject, payload in messages]
        await asyncio.gather(*futures)
        await nc.close()
    run(go)


def read_stream(url: str, name: str) -> list[tuple[str, bytes, dict]]:
    """Every message the stream holds, in sequence order: (subject, payload, headers)."""
    async def go() -> list:
        nc = await _connect(url)
        js = nc.jetstream()
        info = await js.stream_info(name)
        out = []
        for sequence in range(info.state.first_seq, info.state.last_seq + 1):
            try:
                message = await js.get_msg(name, sequence)
            except Exception:  # noqa: BLE001 - deleted
                continue
            out.append((message.subject, message.data, dict(message.headers or {})))
        await nc.close()
        return out
    return run(go)


def consumer_ack_floor(url: str, stream: str, consumer: str) -> int:
    async def go() -> int:
        nc = await _connect(url)
        info = await nc.jetstream().consumer_info(stream, consumer)
        await nc.close()
        return info.ack_floor.stream_seq
    return run(go)


def keyed_messages(keys: int, per_key: int, subject: str = "in.{key}") -> list[tuple[str, bytes]]:
    """`key,seq` payloads, seq 1..per_key for each key, interleaved; key k on subject in.{k % 2}."""
    return [(subject.format(key=key % 2), f"{key},{seq}".encode())
            for seq in range(1, per_key + 1) for key in range(keys)]
