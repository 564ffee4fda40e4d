"""Receivers: push sources batched into blocks, stored (optionally through a write-ahead log) and tracked, so
a source that cannot replay loses nothing (DESIGN 2.5, seed 004)."""

from fluvial.receiver.block_generator import BlockGenerator, BlockGeneratorListener
from fluvial.receiver.receiver import Receiver

__all__ = ["BlockGenerator", "BlockGeneratorListener", "Receiver"]
