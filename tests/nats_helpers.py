"""Synchronous helpers over nats-py for the NATS connector tests: streams, publishing, reading a stream whole."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


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
    """Every message the stream holds, in sequence order: (subject, payload, headers); read through an ephemeral
    pull consumer in batches (one request per message would take seconds for a few thousand)."""

    async def go() -> list:
        from nats.js.api import AckPolicy, ConsumerConfig

        nc = await _connect(url)
        js = nc.jetstream()
        out: list = []
        remaining = (await js.stream_info(name)).state.messages
        if remaining:
            subscription = await js.pull_subscribe(
                "", durable=None, stream=name, config=ConsumerConfig(ack_policy=AckPolicy.NONE)
            )
            while len(out) < remaining:
                for message in await subscription.fetch(min(1000, remaining - len(out)), timeout=5):
                    out.append((message.subject, message.data, dict(message.headers or {})))
            await subscription.unsubscribe()
        await nc.close()
        return out

    return run(go)


def stream_messages(url: str, name: str) -> int:
    """How many messages the stream holds now."""

    async def go() -> int:
        nc = await _connect(url)
        info = await nc.jetstream().stream_info(name)
        await nc.close()
        return info.state.messages

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
    return [
        (subject.format(key=key % 2), f"{key},{seq}".encode()) for seq in range(1, per_key + 1) for key in range(keys)
    ]
