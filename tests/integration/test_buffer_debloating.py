"""Buffer debloating under back pressure (FLIP-183, issue 19): the same paced job as
test_unaligned_checkpoints.py, with aligned checkpoints. Without debloating each aligned barrier waits behind
the full queues (3 s growing to 10 s and more on this machine; `python -m bench.backpressure` measures it). With
`taskmanager.network.memory.buffer-debloat.enabled`, the paced task sizes its channels' buffers to its
throughput, so what is queued takes about the target to drain (0.5 s here, for headroom on a loaded machine):
aligned checkpoints complete in under 2 s, over local channels (thread mode) and remote ones (process mode), and
the subtask reports its current buffer size as Flink's `debloatedBufferSize`."""

from __future__ import annotations

import pytest

from fluvial.runtime.debloat import MAX_BUFFER_SIZE
from tests.integration.test_unaligned_checkpoints import completed_checkpoints, start_paced_job

CHECKPOINTS = 4


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode", ["thread", "process"])
def test_debloated_buffers_keep_aligned_checkpoints_of_a_back_pressured_job_under_two_seconds(mode):
    client = start_paced_job(
        mode,
        **{
            "taskmanager.network.memory.buffer-debloat.enabled": "true",
            "taskmanager.network.memory.buffer-debloat.target": "500 ms",
            "metrics.fetcher.update-interval": "200 ms",
        },
    )
    try:
        done = completed_checkpoints(client, CHECKPOINTS)
        sizes = [snapshot.task.get("debloatedBufferSize") for snapshot in client._job_master.metrics.tasks()]
    finally:
        client.cancel().result()
    assert all(entry["checkpoint_type"] == "CHECKPOINT" for entry in done)
    durations = [entry["end_to_end_duration"] for entry in done]
    assert all(duration < 2000 for duration in durations[1:]), durations  # the first one starts the measuring
    paced = [size for size in sizes if size is not None]
    assert paced and all(0 < size < MAX_BUFFER_SIZE for size in paced), sizes
