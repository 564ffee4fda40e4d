"""The Nexmark benchmark's event generator as a source (DataStream: `NexmarkSource`; SQL: `'connector' =
'nexmark'`)."""

from __future__ import annotations

from fluvial.datastream.connectors.nexmark.generator import NexmarkConfig, NexmarkGenerator
from fluvial.datastream.connectors.nexmark.source import NexmarkSource, event_time

__all__ = ["NexmarkConfig", "NexmarkGenerator", "NexmarkSource", "event_time"]
