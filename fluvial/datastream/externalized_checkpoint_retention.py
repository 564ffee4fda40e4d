"""ExternalizedCheckpointRetention (PyFlink `pyflink.datastream.externalized_checkpoint_retention`)."""

from __future__ import annotations

import enum


class ExternalizedCheckpointRetention(enum.Enum):
    """What happens to a job's checkpoints when it ends: deleted when it is cancelled, kept when it fails
    (DELETE_ON_CANCELLATION); kept when it is cancelled or fails (RETAIN_ON_CANCELLATION); deleted however it
    ends (NO_EXTERNALIZED_CHECKPOINTS, the default). A finished job's are always deleted; savepoints never."""

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2
