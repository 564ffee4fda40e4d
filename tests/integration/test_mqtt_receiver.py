"""The MQTT receiver against a real mosquitto (services/mosquitto.py): a persistent session at QoS 1 and 2 through
the write-ahead log into an exactly-once file sink, acknowledgement only after store, several receivers for
several topic groups, back pressure through receiver.max-rate, and the errors a user meets first (a bad
payload, an unreachable broker, refused credentials)."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest

from fluvial.common import Configuration, Encoder
from fluvial.common.errors import JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.mqtt import MqttReceiver
from fluvial.datastream.connectors.receiver import ReceiverStoppedError
from fluvial.testing import wait_until
from services.server import LOOPBACK, refusing_port
from tests import mqtt_helpers as mh
from tests.server_fixtures import error_chain, mosquitto_server  # noqa: F401 - the fixture

_ids = itertools.count()


def receiver_env(tmp_path: Path, wal: bool = True, mode: str = "thread", **keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration().set_string("local.taskmanager.mode", mode)
    configuration.set_string("receiver.write-ahead-log.enable", "true" if wal else "false")
    for key, value in keys.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}"))
    return env


def file_sink(out: Path) -> FileSink:
    return (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )


def run_until(env: StreamExecutionEnvironment, out: Path, count: int, timeout: float = 40) -> list[str]:
    client = env.execute_async("mqtt")
    try:
        wait_until(
            lambda: len(mh.committed(out)) >= count or client.get_job_execution_result().done(),
            timeout=timeout,
            what=f"{count} committed lines",
        )
        if client.get_job_execution_result().done():
            client.get_job_execution_result().result()
    finally:
        if not client.get_job_execution_result().done():
            client.cancel()
            wait_until(lambda: client.get_job_execution_result().done(), timeout=20, what="the job to cancel")
    return mh.committed(out)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("qos", [1, 2])
def test_a_persistent_session_flows_through_the_log_into_the_sink_once(mosquitto_server, tmp_path, qos):  # noqa: F811
    host, port = LOOPBACK, mosquitto_server.port
    client_id, topic = f"flow-{next(_ids)}", f"flow{next(_ids)}"
    mh.make_session(host, port, client_id, [f"{topic}/#"], qos)
    mh.publish(host, port, mh.keyed(3, 200, topic), qos)  # queued by the broker while nobody is connected
    env = receiver_env(tmp_path)
    env.add_receiver(MqttReceiver(host, port, [f"{topic}/#"], client_id=client_id, qos=qos)).sink_to(
        file_sink(tmp_path / "out")
    )
    threading.Timer(0.5, mh.publish, (host, port, mh.keyed(3, 100, topic, first=201), qos)).start()
    lines = run_until(env, tmp_path / "out", 900)
    assert mh.judge_lines(lines, 3, 300) == (0, 0, [])


class RefusingStore(MqttReceiver):
    """Stores nothing: every store() raises, as after stop()."""

    def store(self, data, metadata=None, position=None):  # noqa: ANN001
        self.offered = getattr(self, "offered", 0) + len(data)
        raise ReceiverStoppedError("refused for the test")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("qos", [1, 2])
def test_a_message_that_was_not_stored_is_not_acknowledged(mosquitto_server, qos):  # noqa: F811
    import paho.mqtt.client as mqtt

    host, port = LOOPBACK, mosquitto_server.port
    client_id, topic = f"noack-{next(_ids)}", f"noack{next(_ids)}"
    mh.make_session(host, port, client_id, [topic], qos)
    mh.publish(host, port, [(topic, b"1"), (topic, b"2")], qos)
    receiver = RefusingStore(host, port, [topic], client_id=client_id, qos=qos)
    receiver.last_stored_position = lambda: None  # run it by hand: on_start connects and stores
    receiver._supervisor = object()
    receiver.stop = lambda message, error=None: None
    runner = threading.Thread(target=receiver.on_start, daemon=True)
    runner.start()
    wait_until(lambda: getattr(receiver, "offered", 0) >= 1, timeout=10, what="the receiver to be offered a message")
    receiver.on_stop()
    runner.join(10)
    # the same session again: the broker still holds both messages, unacknowledged
    again: list[bytes] = []
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False)
    client.on_message = lambda c, u, message: again.append(message.payload)
    client.connect(host, port)
    client.loop_start()
    try:
        wait_until(lambda: sorted(again) == [b"1", b"2"], timeout=10, what="the broker to deliver both again")
    finally:
        client.disconnect()
        client.loop_stop()


@pytest.mark.timeout(60)
def test_several_receivers_read_several_topic_groups(mosquitto_server, tmp_path):  # noqa: F811
    host, port = LOOPBACK, mosquitto_server.port
    a, b, prefix = f"group-a-{next(_ids)}", f"group-b-{next(_ids)}", f"groups{next(_ids)}"
    mh.make_session(host, port, a, [f"{prefix}/0"], 1)
    mh.make_session(host, port, b, [f"{prefix}/1", f"{prefix}/other"], 1)
    mh.publish(host, port, mh.keyed(4, 100, prefix) + [(f"{prefix}/ignored", b"9,1")], 1)
    env = receiver_env(tmp_path)
    first = env.add_receiver(MqttReceiver(host, port, [f"{prefix}/0"], client_id=a))
    second = env.add_receiver(MqttReceiver(host, port, [f"{prefix}/1", f"{prefix}/other"], client_id=b))
    first.union(second).sink_to(file_sink(tmp_path / "out"))
    lines = run_until(env, tmp_path / "out", 400)
    assert mh.judge_lines(lines, 4, 100) == (0, 0, [])


@pytest.mark.timeout(60)
def test_the_rate_limit_holds_the_broker_back(mosquitto_server, tmp_path):  # noqa: F811
    host, port = LOOPBACK, mosquitto_server.port
    client_id, topic = f"rate-{next(_ids)}", f"rate{next(_ids)}"
    mh.make_session(host, port, client_id, [topic], 1)
    mh.publish(host, port, [(topic, f"0,{seq}".encode()) for seq in range(1, 601)], 1)
    env = receiver_env(tmp_path, **{"receiver.max-rate": "200"})
    env.add_receiver(MqttReceiver(host, port, [topic], client_id=client_id, max_batch_size=50)).sink_to(
        file_sink(tmp_path / "out")
    )
    started = time.monotonic()
    lines = run_until(env, tmp_path / "out", 600)
    # a burst of at most one second's worth, then 200 records/s: 600 records need at least 2 s
    assert time.monotonic() - started >= 2.0
    assert mh.judge_lines(lines, 1, 600) == (0, 0, [])


@pytest.mark.timeout(60)
def test_a_payload_that_fails_to_deserialize_names_the_topic(mosquitto_server, tmp_path):  # noqa: F811
    host, port = LOOPBACK, mosquitto_server.port
    client_id, topic = f"bad-{next(_ids)}", f"bad{next(_ids)}/x"
    mh.make_session(host, port, client_id, [topic], 1)
    mh.publish(host, port, [(topic, b"\xff\xfe")], 1)
    env = receiver_env(tmp_path, wal=False)
    env.set_restart_strategy(RestartStrategies.no_restart())
    env.add_receiver(MqttReceiver(host, port, [topic], client_id=client_id)).print()
    with pytest.raises(JobExecutionException) as info:
        env.execute("bad payload")
    text = error_chain(info.value)
    assert f"topic '{topic}'" in text and "cannot be deserialized" in text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("problem", ["unreachable", "credentials"])
def test_an_unreachable_broker_or_refused_credentials_fail_within_the_timeout_naming_the_address(problem, tmp_path):
    from services.mosquitto import start_mosquitto

    server = (
        start_mosquitto(tmp_path / "broker", user="fluvial", password="right") if problem == "credentials" else None
    )
    try:
        with refusing_port() as nobody:
            port = server.port if server else nobody
            env = receiver_env(tmp_path, wal=False)
            env.set_restart_strategy(RestartStrategies.no_restart())
            env.add_receiver(
                MqttReceiver(
                    LOOPBACK, port, ["t"], client_id="c", username="fluvial", password="wrong", connect_timeout=2
                )
            ).print()
            started = time.monotonic()
            with pytest.raises(JobExecutionException) as info:
                env.execute("cannot connect")
            assert time.monotonic() - started < 30
            text = error_chain(info.value)
            assert f"mqtt://{LOOPBACK}:{port}" in text and "within 2 s" in text
            if server:
                assert "refused" in text
    finally:
        if server:
            server.stop()
