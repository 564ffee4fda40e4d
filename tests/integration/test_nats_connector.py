"""The NATS JetStream source and sink against a real nats-server (services/nats.py): exactly-once from a stream
through a job into a stream, acknowledgements only after checkpoints, the duplicate window dropping a
re-commit, starting positions, and the errors a user meets first (a bad payload, a wrong address, wrong
credentials, a missing stream)."""

from __future__ import annotations

import itertools
import time

import pytest

from fluvial.common import Configuration
from fluvial.common.errors import JobExecutionException
from fluvial.common.serialization import SimpleStringSchema
from fluvial.common.task_info import TaskInfo
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.nats import NatsSink, NatsSource, NatsStartingPosition
from fluvial.testing import wait_until
from services.server import refusing_port
from tests import nats_helpers as nh
from tests.server_fixtures import error_chain, nats_server  # noqa: F401 - the fixture

_names = itertools.count()


@pytest.fixture
def streams(nats_server):  # noqa: F811
    """Fresh input and output stream names on the session's server: (url, IN, OUT, input subject prefix)."""
    n = next(_names)
    url = nats_server.extra["url"]
    nh.create_stream(url, f"IN{n}", [f"in{n}.*"])
    nh.create_stream(url, f"OUT{n}", [f"out{n}"])
    return url, f"IN{n}", f"OUT{n}", f"in{n}"


def source(url: str, stream: str, prefix: str, consumer: str, **options) -> NatsSource:
    builder = (
        NatsSource.builder()
        .set_servers(url)
        .set_stream(stream)
        .set_subjects(f"{prefix}.0", f"{prefix}.1")
        .set_consumer_name(consumer)
        .set_deserialization_schema(SimpleStringSchema())
        .set_connect_timeout(3)
    )
    if options.get("bounded", True):
        builder.set_bounded()
    if "start" in options:
        builder.set_starting_position(options["start"])
    return builder.build()


def sink(url: str, subject: str, guarantee=DeliveryGuarantee.EXACTLY_ONCE) -> NatsSink:
    return (
        NatsSink.builder()
        .set_servers(url)
        .set_subject(subject)
        .set_connect_timeout(3)
        .set_serialization_schema(SimpleStringSchema())
        .set_delivery_guarantee(guarantee)
        .build()
    )


def env(parallelism: int = 2, interval: int = 100) -> StreamExecutionEnvironment:
    environment = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "thread")
    )
    environment.set_parallelism(parallelism)
    if interval:
        environment.enable_checkpointing(interval)
    return environment


def payloads(url: str, stream: str) -> list[str]:
    return [data.decode() for _, data, _ in nh.read_stream(url, stream)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("guarantee", list(DeliveryGuarantee))
def test_a_stream_flows_through_a_job_into_a_stream_once(streams, guarantee):
    url, stream_in, stream_out, prefix = streams
    messages = nh.keyed_messages(keys=4, per_key=200, subject=prefix + ".{key}")
    nh.publish(url, messages)
    job = env()
    (
        job.from_source(source(url, stream_in, prefix, "flow"), WatermarkStrategy.no_watermarks(), "nats in")
        .map(lambda line: line.upper(), output_type=None)
        .sink_to(sink(url, f"out{stream_out[3:]}", guarantee))
    )
    job.execute("nats to nats")
    out = payloads(url, stream_out)
    assert sorted(out) == sorted(data.decode().upper() for _, data in messages)
    if guarantee is DeliveryGuarantee.EXACTLY_ONCE:
        ids = [headers.get("Nats-Msg-Id") for _, _, headers in nh.read_stream(url, stream_out)]
        assert all(ids) and len(set(ids)) == len(ids)


@pytest.mark.timeout(60)
def test_messages_are_acknowledged_only_when_a_checkpoint_covering_them_completes(streams):
    url, stream_in, _, prefix = streams
    nh.publish(url, nh.keyed_messages(keys=2, per_key=50, subject=prefix + ".{key}"))
    settings = source(url, stream_in, prefix, "acks", bounded=False)
    reader = settings.create_reader(TaskInfo("job", "src", 0, 1, 1))
    reader.add_splits(settings.create_splits(1))
    try:
        got: list = []
        wait_until(lambda: got.extend(reader.poll(1000) or []) or len(got) == 100, timeout=20, what="100 messages")
        assert nh.consumer_ack_floor(url, stream_in, "acks-0") == 0
        splits = reader.snapshot_state()
        reader.on_snapshot(1)
        assert sorted(split.position for split in splits) == [99, 100]
        assert nh.consumer_ack_floor(url, stream_in, "acks-0") == 0  # a snapshot alone acknowledges nothing
        reader.notify_checkpoint_complete(1)
        wait_until(
            lambda: (
                nh.consumer_ack_floor(url, stream_in, "acks-0") == 99
                and nh.consumer_ack_floor(url, stream_in, "acks-1") == 100
            ),
            timeout=10,
            what="the acks",
        )
    finally:
        reader.close()
    # a reader restored from those positions starts after them: nothing is read twice
    nh.publish(url, [(f"{prefix}.0", b"new")])
    restored = settings.create_reader(TaskInfo("job", "src", 0, 1, 1))
    restored.add_splits(splits)
    try:
        got = []
        wait_until(lambda: got.extend(restored.poll(1000) or []) or got, timeout=20, what="the new message")
        time.sleep(0.3)
        got.extend(restored.poll(1000) or [])
        assert got == ["new"]
    finally:
        restored.close()


@pytest.mark.timeout(60)
def test_a_recommit_after_a_restore_is_dropped_by_the_duplicate_window(streams):
    url, _, stream_out, _ = streams
    out_sink = sink(url, f"out{stream_out[3:]}")
    writer = out_sink.create_writer(TaskInfo("job-a", "sink", 0, 1, 1))
    try:
        writer.write_batch(["a", "b", "c"])
        writer.flush(False)
        committables = writer.prepare_commit()
        state = writer.snapshot_state()
        assert payloads(url, stream_out) == []  # nothing visible before the checkpoint completes
        out_sink.commit(committables)
        out_sink.commit(committables)  # what a restore does with the committables its checkpoint recorded
    finally:
        writer.close()
    restored = out_sink.create_writer(TaskInfo("job-b", "sink", 0, 1, 1), state)
    try:
        out_sink.commit(committables)
        restored.write_batch(["d"])
        out_sink.commit(restored.prepare_commit())
    finally:
        restored.close()
    assert payloads(url, stream_out) == ["a", "b", "c", "d"]


@pytest.mark.timeout(60)
def test_starting_positions_latest_sequence_and_committed(streams):
    url, stream_in, _, prefix = streams
    nh.publish(url, [(f"{prefix}.0", str(i).encode()) for i in range(1, 11)])

    def read(start, consumer: str, expect: int) -> list:
        settings = source(url, stream_in, prefix, consumer, bounded=False, start=start)
        reader = settings.create_reader(TaskInfo("job", "src", 0, 1, 1))
        reader.add_splits(settings.create_splits(1)[:1])
        got: list = []
        try:
            wait_until(
                lambda: got.extend(reader.poll(1000) or []) or len(got) >= expect, timeout=20, what=f"{expect} messages"
            )
            reader.on_snapshot(1)
            reader.notify_checkpoint_complete(1)
            time.sleep(0.2)
        finally:
            reader.close()
        return got

    assert read(NatsStartingPosition.sequence(8), "seq", 3) == ["8", "9", "10"]
    assert read(NatsStartingPosition.earliest(), "committed", 10)[-1] == "10"
    nh.publish(url, [(f"{prefix}.0", b"11")])
    assert read(NatsStartingPosition.committed(), "committed", 1) == ["11"]


@pytest.mark.timeout(60)
def test_a_payload_that_fails_to_deserialize_names_the_subject_and_sequence(streams):
    url, stream_in, _, prefix = streams
    nh.publish(url, [(f"{prefix}.0", b"fine"), (f"{prefix}.1", b"\xff\xfe broken")])
    job = env(parallelism=1, interval=0)
    job.from_source(source(url, stream_in, prefix, "bad"), WatermarkStrategy.no_watermarks()).print()
    with pytest.raises(JobExecutionException) as info:
        job.execute("bad payload")
    text = error_chain(info.value)
    assert f"subject '{prefix}.1'" in text and "stream sequence 2" in text and stream_in in text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("problem", ["unreachable", "credentials"])
def test_an_unreachable_server_or_wrong_credentials_fail_within_the_timeout_naming_the_address(problem, tmp_path):
    from services.nats import start_nats

    server = start_nats(tmp_path, user="fluvial", password="right") if problem == "credentials" else None
    try:
        with refusing_port() as nobody:
            url = server.extra["url"] if server else f"nats://127.0.0.1:{nobody}"
            builder = (
                NatsSource.builder()
                .set_servers(url)
                .set_stream("S")
                .set_consumer_name("c")
                .set_connect_timeout(2)
                .set_deserialization_schema(SimpleStringSchema())
            )
            if server:
                builder.set_credentials("fluvial", "wrong")
            job = env(parallelism=1, interval=0)
            job.from_source(builder.build(), WatermarkStrategy.no_watermarks()).print()
            started = time.monotonic()
            with pytest.raises(JobExecutionException) as info:
                job.execute("cannot connect")
            assert time.monotonic() - started < 30
            text = error_chain(info.value)
            assert url in text and "within 2 s" in text
            if server:
                assert "refused the credentials" in text
    finally:
        if server:
            server.stop()


@pytest.mark.timeout(60)
def test_a_missing_stream_is_named(nats_server):  # noqa: F811
    url = nats_server.extra["url"]
    job = env(parallelism=1, interval=0)
    job.from_source(
        NatsSource.builder()
        .set_servers(url)
        .set_stream("NOPE")
        .set_consumer_name("c")
        .set_deserialization_schema(SimpleStringSchema())
        .build(),
        WatermarkStrategy.no_watermarks(),
    ).print()
    with pytest.raises(JobExecutionException) as info:
        job.execute("missing stream")
    assert "stream NOPE does not exist" in error_chain(info.value)


@pytest.mark.timeout(60)
def test_on_a_workqueue_stream_messages_leave_only_when_the_checkpoint_covering_them_completes(nats_server):  # noqa: F811
    from nats.js.api import RetentionPolicy

    url, n = nats_server.extra["url"], next(_names)
    nh.create_stream(url, f"WQ{n}", [f"wq{n}.*"], retention=RetentionPolicy.WORK_QUEUE)
    nh.publish(url, [(f"wq{n}.{i % 2}", str(i).encode()) for i in range(10)])
    settings = source(url, f"WQ{n}", f"wq{n}", "wq", bounded=False)
    reader = settings.create_reader(TaskInfo("job", "src", 0, 1, 1))
    reader.add_splits(settings.create_splits(1))
    try:
        got: list = []
        wait_until(lambda: got.extend(reader.poll(1000) or []) or len(got) == 10, timeout=20, what="10 messages")
        reader.snapshot_state()
        reader.on_snapshot(1)
        assert nh.stream_messages(url, f"WQ{n}") == 10  # read, not yet covered by a completed checkpoint
        reader.notify_checkpoint_complete(1)
        wait_until(lambda: nh.stream_messages(url, f"WQ{n}") == 0, timeout=10, what="the acknowledged messages to go")
    finally:
        reader.close()


@pytest.mark.timeout(60)
def test_close_lets_a_call_nobody_waits_for_any_more_clean_up_on_the_running_loop(nats_server):  # noqa: F811
    """A sink's wait for acks that timed out is still on the connection's loop: close() cancels it while the loop
    runs, so its cleanup (cancelling futures: loop.call_soon) works. Left for the garbage collector, it ran on
    the closed loop and failed ("Event loop is closed", a warning in a later test)."""
    import asyncio

    from fluvial.datastream.connectors.nats_connection import NatsConnection, NatsConnectionOptions

    connection = NatsConnection.open(NatsConnectionOptions((nats_server.extra["url"],)), "test")
    cleaned_up = []

    async def wait_forever() -> None:
        waiting = asyncio.get_running_loop().create_future()
        try:
            await waiting
        finally:
            waiting.cancel()  # what _await_acks does with its acks
            asyncio.get_running_loop().call_soon(lambda: None)
            cleaned_up.append(True)

    with pytest.raises(TimeoutError):
        connection.call(wait_forever, timeout=0.2)
    connection.close()
    assert cleaned_up == [True]
