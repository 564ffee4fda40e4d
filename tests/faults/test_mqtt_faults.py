"""The MQTT receiver under real faults, judged by a per-key sequence oracle over the committed output of an
exactly-once file sink: the TaskManager process running the receiver SIGKILLed mid-job, and the broker stopped
and restarted mid-job, while a publisher keeps publishing. Nothing may be lost and each key's sequence must stay
in order. QoS 2 is exactly once: a kill leaves no duplicate (the log records which stored messages the broker
has not heard complete, and their redelivery is acknowledged without storing them again). QoS 1 duplicates are
counted and bounded by the broker's in-flight window: a kill repeats what was in the write-ahead log but whose
PUBACK had not reached the broker (usually the last batch), a broker restart what it had in flight when it saved
its sessions (docs/connectors/mqtt.md).
The soak with many trials is `python -m bench.broker_faults mqtt`."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest

from fluvial.common import Configuration, Encoder
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.mqtt import MqttReceiver
from fluvial.testing import wait_until
from fluvial.testing.faults import completed_checkpoints
from services.server import LOOPBACK
from tests import mqtt_helpers as mh
from tests.server_fixtures import mosquitto_server, require  # noqa: F401 - the fixture

KEYS, PER_KEY, BATCH = 3, 600, 100
INFLIGHT = 1000


def mqtt_job(
    port: int, client_id: str, topic: str, workdir: Path, mode: str, restore: str | None = None, qos: int = 1
) -> StreamExecutionEnvironment:
    """The receiver (write-ahead log on) into an exactly-once file sink; `restore`: a checkpoint to start from."""
    configuration = (
        Configuration().set_string("local.taskmanager.mode", mode).set_string("receiver.write-ahead-log.enable", "true")
    )
    if restore:
        configuration.set_string("execution.savepoint.path", restore)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{workdir / 'chk'}"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 200))
    sink = (
        FileSink.for_row_format(str(workdir / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    receiver = MqttReceiver(LOOPBACK, port, [f"{topic}/#"], client_id=client_id, qos=qos, max_batch_size=BATCH)
    env.add_receiver(receiver, "mqtt in").uid("mqtt-in").sink_to(sink).uid("out")
    return env


class Publisher(threading.Thread):
    """Publishes the keyed messages in slices, so the fault lands while messages keep coming. `lock` is held
    while a slice is published: a broker restart takes it, so no slice is cut short (a publisher retrying a
    slice would duplicate the input itself)."""

    def __init__(self, port: int, topic: str, qos: int = 1) -> None:
        super().__init__(daemon=True)
        self.port, self.topic, self.qos = port, topic, qos
        self.lock = threading.Lock()
        self.error: BaseException | None = None

    def run(self) -> None:
        messages = mh.keyed(KEYS, PER_KEY, self.topic)
        try:
            for start in range(0, len(messages), 150):
                with self.lock:
                    mh.publish(LOOPBACK, self.port, messages[start : start + 150], self.qos)
                time.sleep(0.05)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error


def run_with_fault(
    env,
    workdir: Path,
    publisher: Publisher,
    fault,  # noqa: ANN001
    checkpoints: int = 2,
) -> tuple[int, int, list[str]]:
    client = env.execute_async("mqtt under faults")
    try:
        publisher.start()
        wait_until(
            lambda: max(completed_checkpoints(workdir / "chk"), default=0) >= checkpoints,
            timeout=60,
            what=f"{checkpoints} checkpoints",
        )
        fault(client)
        publisher.join(90)
        assert publisher.error is None, publisher.error
        wait_until(
            lambda: len({*mh.committed(workdir / "out")}) >= KEYS * PER_KEY or client.get_job_execution_result().done(),
            timeout=60,
            what="every message committed",
        )
    finally:
        if not client.get_job_execution_result().done():
            client.cancel()
            wait_until(lambda: client.get_job_execution_result().done(), timeout=30, what="the job to cancel")
    return mh.judge_lines(mh.committed(workdir / "out"), KEYS, PER_KEY)


@pytest.mark.timeout(240)
def test_the_receivers_task_manager_killed_mid_job_loses_nothing(mosquitto_server, tmp_path):  # noqa: F811
    port = mosquitto_server.port
    mh.make_session(LOOPBACK, port, "mqtt-kill", ["kill/#"], 1)
    env = mqtt_job(port, "mqtt-kill", "kill", tmp_path, "process")

    def kill(client) -> None:  # noqa: ANN001
        os.kill(client.cluster.processes.pids[0], signal.SIGKILL)

    lost, duplicated, disordered = run_with_fault(env, tmp_path, Publisher(port, "kill"), kill)
    assert (lost, disordered) == (0, [])
    # what was logged but whose acknowledgement had not reached the broker comes again: usually the last batch,
    # at most the broker's in-flight window (the soak saw 0 to 167 with batches of 100)
    assert duplicated <= INFLIGHT


QOS2_TRIALS = 3


@pytest.mark.timeout(240)
def test_qos2_is_exactly_once_when_the_receivers_task_manager_is_killed(mosquitto_server, tmp_path):  # noqa: F811
    """A few trials, each killed at another moment; `python -m bench.broker_faults mqtt-qos2` is the soak."""
    port, rng = mosquitto_server.port, random.Random(2)
    for trial in range(QOS2_TRIALS):
        client_id, topic, workdir = f"qos2-kill-{trial}", f"qos2kill{trial}", tmp_path / f"t{trial}"
        workdir.mkdir()
        mh.make_session(LOOPBACK, port, client_id, [f"{topic}/#"], 2)
        env = mqtt_job(port, client_id, topic, workdir, "process", qos=2)

        def kill(client) -> None:  # noqa: ANN001
            time.sleep(rng.uniform(0, 0.3))
            os.kill(client.cluster.processes.pids[0], signal.SIGKILL)

        outcome = run_with_fault(env, workdir, Publisher(port, topic, qos=2), kill, checkpoints=rng.randint(1, 3))
        assert outcome == (0, 0, []), f"trial {trial}: (lost, duplicated, keys out of order) = {outcome}"


@pytest.mark.timeout(240)
def test_the_broker_restarted_mid_job_loses_nothing(tmp_path):
    from services.mosquitto import mosquitto_binary, start_mosquitto
    from services.server import restart

    require(mosquitto_binary() is not None, "mosquitto (apt-get install mosquitto)")
    servers = [start_mosquitto(tmp_path / "broker")]
    try:
        port = servers[0].port
        mh.make_session(LOOPBACK, port, "mqtt-restart", ["restart/#"], 1)
        env = mqtt_job(port, "mqtt-restart", "restart", tmp_path, "thread")

        publisher = Publisher(port, "restart")

        def restart_broker(client) -> None:  # noqa: ANN001
            with publisher.lock:
                servers.append(restart(servers[-1]))

        lost, duplicated, disordered = run_with_fault(env, tmp_path, publisher, restart_broker)
        assert (lost, disordered) == (0, [])
        # what the broker had sent and not yet heard acknowledged when it saved its sessions comes again: at
        # most its in-flight window (max_inflight_messages in services/mosquitto.py)
        assert duplicated <= INFLIGHT
    finally:
        servers[-1].stop()
