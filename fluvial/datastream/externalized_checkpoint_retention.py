"""ExternalizedCheckpointRetention (PyFlink `pyflink.datastream.externalized_checkpoint_retention`)."""

from __future__ import annotations

import enum


class ExternalizedCheckpointRetention(enum.Enum):
    """What happens to retained checkpoints when the job is cancelled (they are always kept when it fails)."""

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2
