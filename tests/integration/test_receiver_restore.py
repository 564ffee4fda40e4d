"""A receiver job restored from a checkpoint by a new run loses nothing and duplicates nothing (issue 13,
defect 1).

Run A reads a line server through a reliable receiver (each batch is acknowledged once it is in the write-ahead
log) into a slow pipeline, so the log holds many batches the job has not emitted yet; after two checkpoints run
A ends without emitting them (cancelled: like a crash, nothing of its log is cleaned). Run B — a new job id —
restores A's latest checkpoint. It must find A's log through the checkpoint (the log is keyed by the receiver
source's operator id and stream, not by the job id), recover the tracker's numbering, replay every block
stored after the checkpoint, and then read on from the server. The server sends each line exactly once
overall (a batch that was not acknowledged is sent again), so over both runs' committed files every line must
appear exactly once.
"""

from __future__ import annotations

import time

import pytest

from fluvial.common.configuration import Configuration
from fluvial.common.errors import JobCancelledException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_config import ExternalizedCheckpointRetention
from fluvial.testing import wait_until
from tests.integration.test_receiver_exactly_once import (
    BatchAckReceiver,
    LineServer,
    assert_every_line_exactly_once,
    committed_lines,
    file_sink,
)

N = 3000


class Slow(MapFunction):
    def map(self, value):
        time.sleep(0.001)
        return value


def run(tmp_path, port: int, out: str, restore: str | None = None) -> StreamExecutionEnvironment:
    conf = (
        Configuration()
        .set_string("receiver.write-ahead-log.enable", "true")
        .set_string("receiver.block-interval", "50 ms")
    )
    if restore is not None:
        conf.set_string("execution.savepoint.path", restore)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    env.set_restart_strategy(RestartStrategies.no_restart())
    receiver = BatchAckReceiver(port, str(tmp_path / "never-crashes"), crash_after=10**9)
    (
        env.add_receiver(receiver, "acked lines")
        .uid("lines")
        .map(Slow())
        .uid("slow")
        .sink_to(file_sink(tmp_path / out))
        .uid("sink")
    )
    return env


@pytest.mark.timeout(90)
def test_a_new_run_restored_from_a_checkpoint_replays_the_receivers_log_exactly_once(tmp_path):
    server = LineServer(N, "ack", chunk=100, pause_s=0.002)
    server.hold_at = N // 2  # run A stops mid-stream, whatever the machine's speed
    try:
        first = run(tmp_path, server.port, "a").execute_async("receiver run A")
        store = first._job_master.checkpointing.store
        wait_until(
            lambda: store.latest() is not None and store.latest().checkpoint_id >= 2, what="two checkpoints of run A"
        )
        checkpoint = store.latest()
        first.cancel()
        with pytest.raises(JobCancelledException):
            first.get_job_execution_result().result(timeout=30)
        stored_by_a = server.cursor
        assert 0 < stored_by_a < N, "run A did not stop mid-stream"
        server.resume.set()

        second = run(tmp_path, server.port, "b", checkpoint.metadata_location).execute_async("receiver run B")
        second.get_job_execution_result().result(timeout=60)
        assert server.finished.is_set() and not server.errors
    finally:
        server.close()
    lines_a, _ = committed_lines(tmp_path / "a")
    lines_b, _ = committed_lines(tmp_path / "b")
    assert len(lines_a) < stored_by_a, "run A emitted everything it stored: there was nothing to replay"
    assert_every_line_exactly_once(lines_a + lines_b, N)
    assert second.get_job_details().result(timeout=5).restarts == 0
