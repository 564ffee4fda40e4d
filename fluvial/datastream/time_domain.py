"""TimeDomain (PyFlink `pyflink.datastream.time_domain`): which clock fired a timer."""

from __future__ import annotations

import enum


class TimeDomain(enum.Enum):
    EVENT_TIME = 0
    PROCESSING_TIME = 1
