"""The NATS source and sink under real faults, judged by a per-key sequence oracle over the output stream: a
TaskManager process SIGKILLed mid-job, and the NATS server stopped and restarted mid-job. Every `key,seq` of the
input must reach the output stream exactly once, each key's sequence in order. (The soak with many trials is
`python -m bench.broker_faults nats`.)"""

from __future__ import annotations

import os
import signal
import time
from collections import defaultdict
from pathlib import Path

import pytest

from fluvial.common import Configuration
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.common.serialization import SimpleStringSchema
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.nats import NatsSink, NatsSource
from fluvial.testing import wait_until
from fluvial.testing.faults import completed_checkpoints
from tests import nats_helpers as nh
from tests.server_fixtures import nats_server, require  # noqa: F401 - the fixture

KEYS, PER_KEY = 4, 1000


class SlowTag(MapFunction):
    """Slow enough that checkpoints and a fault land mid-job: about a second of sleeping per subtask, so no subtask
    has ended when the TaskManager is killed after the second checkpoint (killing one whose task had ended
    restarts nothing, and a busy machine ended one that early with a sleep every 20 records)."""

    def open(self, runtime_context):
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen % 4 == 0:
            time.sleep(0.002)
        return value


def nats_job(url: str, name: str, checkpoints: Path, mode: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", mode)
    )
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{checkpoints}"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 200))
    source = (
        NatsSource.builder()
        .set_servers(url)
        .set_stream(f"IN{name}")
        .set_subjects(f"in{name}.0", f"in{name}.1")
        .set_consumer_name(f"faults{name}")
        .set_bounded()
        .set_deserialization_schema(SimpleStringSchema())
        .set_request_timeout(3)
        .build()
    )
    sink = (
        NatsSink.builder()
        .set_servers(url)
        .set_subject(f"out{name}")
        .set_request_timeout(3)
        .set_serialization_schema(SimpleStringSchema())
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "keyed input")
        .uid("nats-in")
        .map(SlowTag())
        .uid("slow")
        .sink_to(sink)
        .uid("nats-out")
    )
    return env


def prepare(url: str, name: str, per_key: int = PER_KEY) -> None:
    nh.create_stream(url, f"IN{name}", [f"in{name}.*"])
    nh.create_stream(url, f"OUT{name}", [f"out{name}"])
    nh.publish(url, nh.keyed_messages(KEYS, per_key, subject=f"in{name}" + ".{key}"))


def judge(url: str, name: str, per_key: int = PER_KEY) -> tuple[int, int, list[str]]:
    """(lost, duplicated, keys out of order) over the output stream."""
    sequences: dict[int, list[int]] = defaultdict(list)
    for _, data, _ in nh.read_stream(url, f"OUT{name}"):
        key, seq = map(int, data.decode().split(","))
        sequences[key].append(seq)
    seen = {(key, seq) for key, seqs in sequences.items() for seq in seqs}
    total = sum(len(seqs) for seqs in sequences.values())
    lost = KEYS * per_key - len(seen & {(k, s) for k in range(KEYS) for s in range(1, per_key + 1)})
    disordered = [f"key {key}" for key, seqs in sequences.items() if seqs != sorted(seqs)]
    return lost, total - len(seen), disordered


def after_checkpoints(client, checkpoints: Path, at_least: int) -> None:
    wait_until(
        lambda: (
            max(completed_checkpoints(checkpoints), default=0) >= at_least or client.get_job_execution_result().done()
        ),
        timeout=60,
        what=f"checkpoint {at_least}",
    )
    assert not client.get_job_execution_result().done(), "the job ended before the fault"


@pytest.mark.timeout(240)
def test_a_task_manager_killed_mid_job_loses_and_duplicates_nothing(nats_server, tmp_path):  # noqa: F811
    url = nats_server.extra["url"]
    prepare(url, "K")
    client = nats_job(url, "K", tmp_path / "chk", "process").execute_async("nats kill a TaskManager")
    after_checkpoints(client, tmp_path / "chk", 2)
    victim = client.cluster.processes.pids[1]
    os.kill(victim, signal.SIGKILL)
    client.get_job_execution_result().result(timeout=200)
    assert client._job_master.restarts >= 1
    assert judge(url, "K") == (0, 0, [])


@pytest.mark.timeout(240)
def test_the_server_restarted_mid_job_loses_and_duplicates_nothing(tmp_path):
    from services.nats import nats_server_binary, start_nats
    from services.server import restart

    require(nats_server_binary() is not None, "nats-server (apt-get install nats-server)")
    server = start_nats(tmp_path / "nats")
    try:
        url = server.extra["url"]
        prepare(url, "R")
        client = nats_job(url, "R", tmp_path / "chk", "thread").execute_async("nats server restart")
        after_checkpoints(client, tmp_path / "chk", 2)
        server = restart(server)
        client.get_job_execution_result().result(timeout=200)
        assert judge(url, "R") == (0, 0, [])
    finally:
        server.stop()
