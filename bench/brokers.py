"""NATS and MQTT ingest: records/s into a discarding (counting) sink against a bare client loop reading the same
data in the same run (goal >= 0.7x), and the MQTT receiver with and without the write-ahead log.

`python -m bench.brokers [nats|mqtt|mqtt-qos2]`. Each starts its own server (services/) on a free loopback port.
- NATS: a stream of N small messages; fluvial reads it with a bounded NatsSource (one split, thread mode,
  parallelism 1) into a counting sink; the bare loop pulls the same stream with nats-py's pull consumer in
  batches of 1,000 and decodes every payload. Both include connecting and creating their consumer.
- MQTT: N QoS 1 messages queued in a persistent session before each run; fluvial's MqttReceiver job (WAL off,
  then on) runs until its counting sink has every record; the bare loop is a paho client with manual acks that
  decodes and acknowledges each message. Both include connecting. `mqtt-qos2`: the same at QoS 2 with the
  write-ahead log on (the receiver's exactly-once mode) against paho's QoS 2 loop.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.harness import Measurement, report
from bench.spine import CountingSink
from fluvial.common import Configuration
from fluvial.common.serialization import SimpleStringSchema
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import StreamExecutionEnvironment

NATS_RECORDS = int(os.environ.get("BENCH_NATS_RECORDS", "200000"))
MQTT_RECORDS = int(os.environ.get("BENCH_MQTT_RECORDS", "50000"))
TARGET = 0.7
REPEAT = 3
_runs = itertools.count()


def _env(**keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration().set_string("local.taskmanager.mode", "thread")
    for key, value in keys.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    return env


def _best(runs: list[float]) -> float:
    return min(runs)


# -- NATS ------------------------------------------------------------------------------------------------------


def nats_fluvial(url: str) -> float:
    from fluvial.datastream.connectors.nats import NatsSource

    env = _env()
    sink = CountingSink()
    source = (
        NatsSource.builder()
        .set_servers(url)
        .set_stream("BENCH")
        .set_consumer_name(f"fluvial{next(_runs)}")
        .set_deserialization_schema(SimpleStringSchema())
        .set_bounded()
        .build()
    )
    env.from_source(source, WatermarkStrategy.no_watermarks(), "nats").add_sink(sink)
    started = time.perf_counter()
    env.execute("nats bench")
    seconds = time.perf_counter() - started
    assert sink.count == NATS_RECORDS, sink.count
    return seconds


def nats_bare(url: str) -> float:
    async def go() -> float:
        import nats
        from nats.js.api import AckPolicy, ConsumerConfig

        started = time.perf_counter()
        client = await nats.connect(url)
        js = client.jetstream()
        name = f"bare{next(_runs)}"
        await js.add_consumer("BENCH", ConsumerConfig(durable_name=name, ack_policy=AckPolicy.ALL, max_ack_pending=-1))
        subscription = await js.pull_subscribe_bind(name, "BENCH")
        count = 0
        while count < NATS_RECORDS:
            messages = await subscription.fetch(1000, timeout=1)
            values = [message.data.decode() for message in messages]
            count += len(values)
        await client.close()
        return time.perf_counter() - started

    return asyncio.run(go())


def bench_nats() -> bool:
    from services.nats import start_nats
    from tests import nats_helpers as nh

    with tempfile.TemporaryDirectory() as directory:
        server = start_nats(Path(directory))
        try:
            url = server.extra["url"]
            nh.create_stream(url, "BENCH", ["bench.>"])
            for start in range(0, NATS_RECORDS, 50_000):
                nh.publish(
                    url, [("bench.x", f"{i % 7},{i}".encode()) for i in range(start, min(NATS_RECORDS, start + 50_000))]
                )
            fluvial, bare = [], []
            for _ in range(REPEAT):
                fluvial.append(nats_fluvial(url))
                bare.append(nats_bare(url))
            return report(
                f"NATS JetStream source, {NATS_RECORDS:,} records into a counting sink (load {os.getloadavg()[0]:.1f})",
                Measurement("fluvial", NATS_RECORDS, _best(fluvial)),
                Measurement("nats-py", NATS_RECORDS, _best(bare)),
                TARGET,
                ("fluvial", "nats-py loop"),
            )
        finally:
            server.stop()


# -- MQTT ------------------------------------------------------------------------------------------------------


def mqtt_queue(port: int, client_id: str, qos: int = 1) -> None:
    from tests import mqtt_helpers as mh

    mh.make_session("127.0.0.1", port, client_id, ["bench/#"], qos)
    mh.publish("127.0.0.1", port, [("bench/x", f"{i % 7},{i}".encode()) for i in range(MQTT_RECORDS)], qos)


def mqtt_fluvial(port: int, wal: bool, checkpoints: str, qos: int = 1) -> float:
    from fluvial.datastream.connectors.mqtt import MqttReceiver

    client_id = f"fluvial{next(_runs)}"
    mqtt_queue(port, client_id, qos)
    env = _env(**{"receiver.write-ahead-log.enable": "true" if wal else "false"})
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{checkpoints}")
    sink = CountingSink()
    env.add_receiver(MqttReceiver("127.0.0.1", port, ["bench/#"], client_id=client_id, qos=qos)).add_sink(sink)
    started = time.perf_counter()
    client = env.execute_async("mqtt bench")
    while sink.count < MQTT_RECORDS:
        if client.get_job_execution_result().done():
            client.get_job_execution_result().result()
        time.sleep(0.005)
    seconds = time.perf_counter() - started
    client.cancel()
    while not client.get_job_execution_result().done():
        time.sleep(0.01)
    return seconds


def mqtt_bare(port: int, qos: int = 1) -> float:
    import paho.mqtt.client as mqtt

    client_id = f"bare{next(_runs)}"
    mqtt_queue(port, client_id, qos)
    done = threading.Event()
    received = []

    def on_message(client, userdata, message) -> None:  # noqa: ANN001
        received.append(message.payload.decode())
        client.ack(message.mid, message.qos)
        if len(received) == MQTT_RECORDS:
            done.set()

    started = time.perf_counter()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False, manual_ack=True)
    client.on_message = on_message
    client.connect("127.0.0.1", port)
    client.loop_start()
    assert done.wait(300), f"{len(received)} of {MQTT_RECORDS} received"
    seconds = time.perf_counter() - started
    client.disconnect()
    client.loop_stop()
    return seconds


def bench_mqtt() -> bool:
    from services.mosquitto import start_mosquitto

    with tempfile.TemporaryDirectory() as directory:
        server = start_mosquitto(Path(directory) / "broker")
        try:
            runs: dict[str, list[float]] = {"off": [], "on": [], "bare": []}
            for _ in range(REPEAT):
                runs["off"].append(mqtt_fluvial(server.port, False, str(Path(directory) / "chk")))
                runs["on"].append(mqtt_fluvial(server.port, True, str(Path(directory) / "chk")))
                runs["bare"].append(mqtt_bare(server.port))
            bare = Measurement("paho", MQTT_RECORDS, _best(runs["bare"]))
            title = (
                f"MQTT receiver, {MQTT_RECORDS:,} QoS 1 records into a counting sink (load {os.getloadavg()[0]:.1f})"
            )
            ok = report(
                f"{title}, write-ahead log off",
                Measurement("fluvial", MQTT_RECORDS, _best(runs["off"])),
                bare,
                TARGET,
                ("fluvial", "paho loop"),
            )
            ok &= report(
                f"{title}, write-ahead log on",
                Measurement("fluvial", MQTT_RECORDS, _best(runs["on"])),
                bare,
                TARGET,
                ("fluvial", "paho loop"),
            )
            return ok
        finally:
            server.stop()


def bench_mqtt_qos2() -> bool:
    from services.mosquitto import start_mosquitto

    with tempfile.TemporaryDirectory() as directory:
        server = start_mosquitto(Path(directory) / "broker")
        try:
            runs: dict[str, list[float]] = {"on": [], "bare": []}
            for _ in range(REPEAT):
                runs["on"].append(mqtt_fluvial(server.port, True, str(Path(directory) / "chk"), qos=2))
                runs["bare"].append(mqtt_bare(server.port, qos=2))
            title = (
                f"MQTT receiver, {MQTT_RECORDS:,} QoS 2 records into a counting sink "
                f"(load {os.getloadavg()[0]:.1f}), write-ahead log on (exactly-once)"
            )
            return report(
                title,
                Measurement("fluvial", MQTT_RECORDS, _best(runs["on"])),
                Measurement("paho", MQTT_RECORDS, _best(runs["bare"])),
                TARGET,
                ("fluvial", "paho loop"),
            )
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> bool:
    which = (argv if argv is not None else sys.argv[1:]) or ["nats", "mqtt"]
    ok = True
    if "nats" in which:
        ok &= bench_nats()
    if "mqtt" in which:
        ok &= bench_mqtt()
    if "mqtt-qos2" in which:
        ok &= bench_mqtt_qos2()
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
