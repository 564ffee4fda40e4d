"""Partitioning as plan logic: which consumer subtasks a producing subtask's edge reaches (DESIGN 2.1).

How records are split over those channels at run time is `fluvial.runtime.channel_selectors`.
"""

from __future__ import annotations


def pointwise_targets(producer_index: int, producers: int, consumers: int) -> list[int]:
    """Which consumer subtasks one producer feeds over a POINTWISE edge (forward, rescale), as Flink wires it:
    equal sizes 1:1; fewer producers each feed a contiguous block; more producers share consumers."""
    if producers == consumers:
        return [producer_index]
    if producers < consumers:
        start = producer_index * consumers // producers
        end = (producer_index + 1) * consumers // producers
        return list(range(start, end))
    return [producer_index * consumers // producers]
