"""Helpers over paho-mqtt for the MQTT receiver's tests: a persistent session made ahead of a job (so messages
published before it starts are queued for it), publishing at QoS 1/2, and the per-key sequence oracle over
the committed `key,seq` lines of a job's file sink."""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path


def _client(client_id: str = "", clean: bool = True):  # type: ignore[no-untyped-def]
    import paho.mqtt.client as mqtt

    return mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean)


def make_session(host: str, port: int, client_id: str, topics: list[str], qos: int) -> None:
    """Connect once as `client_id` with a persistent session and subscribe: the broker queues from now on."""
    client = _client(client_id, clean=False)
    subscribed = threading.Event()
    client.on_subscribe = lambda *args: subscribed.set()
    client.connect(host, port)
    client.loop_start()
    client.subscribe([(topic, qos) for topic in topics])
    assert subscribed.wait(10), "the broker did not confirm the subscription"
    client.disconnect()
    client.loop_stop()


def publish(host: str, port: int, messages: list[tuple[str, bytes]], qos: int) -> None:
    """Publish and wait until the broker has every message (QoS 1/2 handshakes complete)."""
    client = _client()
    client.max_inflight_messages_set(1000)
    client.max_queued_messages_set(0)
    client.connect(host, port)
    client.loop_start()
    infos = [client.publish(topic, payload, qos=qos) for topic, payload in messages]
    for info in infos:
        info.wait_for_publish(30)
    client.disconnect()
    client.loop_stop()


def keyed(keys: int, per_key: int, topic: str, first: int = 1) -> list[tuple[str, bytes]]:
    """`key,seq` payloads; key k on topic `{topic}/{k % 2}`."""
    return [
        (f"{topic}/{key % 2}", f"{key},{seq}".encode()) for seq in range(first, first + per_key) for key in range(keys)
    ]


def judge_lines(lines: list[str], keys: int, per_key: int) -> tuple[int, int, list[str]]:
    """(lost, duplicated, keys whose first occurrences are out of order) over `key,seq` lines."""
    per: dict[int, list[int]] = defaultdict(list)
    for line in lines:
        key, seq = map(int, line.split(","))
        per[key].append(seq)
    seen = {(key, seq) for key, seqs in per.items() for seq in seqs}
    expected = {(key, seq) for key in range(keys) for seq in range(1, per_key + 1)}
    duplicated = sum(len(seqs) for seqs in per.values()) - len(seen)
    disordered = []
    for key, seqs in per.items():
        firsts = list(dict.fromkeys(seqs))
        if firsts != sorted(firsts):
            disordered.append(f"key {key}")
    return len(expected - seen), duplicated, disordered


def committed(directory: Path) -> list[str]:
    """The visible lines of a one-subtask file sink, part files in the order they were written (by counter)."""
    if not directory.exists():
        return []
    parts = sorted(
        (path for path in directory.rglob("*") if path.is_file() and not path.name.startswith(".")),
        key=lambda path: int(path.name.rsplit("-", 1)[1]),
    )
    return [line for path in parts for line in path.read_text(encoding="utf-8").splitlines()]
