"""PyFlink's `pyflink.datastream.connectors.base`: the Source and Sink bases, DeliveryGuarantee, and the
preprocessing hook a sink may declare (`SupportsPreprocessing`: `sink_to` applies its StreamTransformer to
the stream first)."""

from __future__ import annotations

import abc
import enum
from typing import Any

from fluvial.datastream.connectors.sink import Sink
from fluvial.datastream.connectors.source import Source

__all__ = ["DeliveryGuarantee", "Sink", "Source", "StreamTransformer", "SupportsPreprocessing"]


class DeliveryGuarantee(enum.Enum):
    """What a sink promises about each record after failures."""

    EXACTLY_ONCE = 0  # committed with checkpoints (two-phase commit): each record once
    AT_LEAST_ONCE = 1  # flushed at checkpoints: a record may be written again after a restore
    NONE = 2  # best effort: records may be lost or duplicated


class StreamTransformer(abc.ABC):
    """Turns the stream a sink receives into the stream it writes (e.g. adds a keyed pre-aggregation)."""

    @abc.abstractmethod
    def apply(self, ds: Any) -> Any:
        """Add operators to a stream (a sink's preprocessing).

        Args:
            ds: The stream.

        Returns:
            The transformed stream.
        """


class SupportsPreprocessing(abc.ABC):
    """A sink that wants its input transformed first; `get_transformer()` may return None."""

    @abc.abstractmethod
    def get_transformer(self) -> StreamTransformer | None:
        """The operators to run before the sink, or None."""
