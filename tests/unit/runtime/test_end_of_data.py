"""A task's network input across the end of data (FLIP-147): END_OF_INPUT ends the data of a channel but
leaves it open for the barrier of its producer's final checkpoint; END_OF_PARTITION closes it, after which it
counts as aligned for every barrier."""

from __future__ import annotations

from fluvial.runtime.alignment import BarrierHandler
from fluvial.runtime.channels import LocalChannel
from fluvial.runtime.input_processor import NetworkInput, StepResult
from fluvial.runtime.records import END_OF_INPUT, END_OF_PARTITION, CheckpointBarrier, RecordBatch


class Checkpoints:
    def __init__(self) -> None:
        self.taken: list[int] = []

    def checkpoint_state(self, barrier, stats=None) -> None:
        self.taken.append(barrier.checkpoint_id)

    def abort_checkpoint(self, checkpoint_id, reason, detail="") -> None:
        raise AssertionError(f"checkpoint {checkpoint_id} aborted: {reason}")


def gate(channels: int):
    received: list = []
    checkpoints = Checkpoints()
    queues = [LocalChannel(64) for _ in range(channels)]
    network = NetworkInput(
        queues,
        [lambda batch: received.extend(batch.values)] * channels,
        barriers=BarrierHandler(channels, True, checkpoints),
    )
    return network, queues, received, checkpoints


def drain(network: NetworkInput) -> list[StepResult]:
    results = []
    while (result := network.step()) is not StepResult.IDLE:
        results.append(result)
    return results


def test_input_ends_once_when_every_channel_ended_its_data_and_barriers_still_arrive_after_it():
    network, (first, second), received, checkpoints = gate(2)
    first.push(RecordBatch([1]))
    first.push(END_OF_INPUT)
    assert StepResult.END_OF_INPUT not in drain(network)
    second.push(RecordBatch([2]))
    second.push(END_OF_INPUT)
    assert drain(network).count(StepResult.END_OF_INPUT) == 1
    assert received == [1, 2]
    # both producers wait for their final checkpoint: its barriers come through the ended channels
    first.push(CheckpointBarrier(7, 0))
    drain(network)
    assert checkpoints.taken == []
    second.push(CheckpointBarrier(7, 0))
    drain(network)
    assert checkpoints.taken == [7]
    assert not network.all_partitions_ended
    first.push(END_OF_PARTITION)
    second.push(END_OF_PARTITION)
    assert StepResult.END_OF_INPUT not in drain(network)
    assert network.all_partitions_ended


def test_a_closed_partition_counts_as_aligned_and_also_ends_its_data():
    network, (first, second), _, checkpoints = gate(2)
    first.push(END_OF_PARTITION)  # a producer without a final checkpoint: its end of data and its end at once
    assert drain(network) == [StepResult.PROGRESS]
    second.push(CheckpointBarrier(3, 0))
    drain(network)
    assert checkpoints.taken == [3], "the closed channel held the alignment up"
    second.push(END_OF_PARTITION)
    assert StepResult.END_OF_INPUT in drain(network)
