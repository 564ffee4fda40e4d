"""TimeDomain (PyFlink `pyflink.datastream.time_domain`): which clock fired a timer."""

from __future__ import annotations

import enum


class TimeDomain(enum.Enum):
    """The clock a timer runs on (PyFlink's `TimeDomain`): EVENT_TIME or PROCESSING_TIME."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1
