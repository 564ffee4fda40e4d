"""InputDependencyConstraint (PyFlink `pyflink.common.input_dependency_constraint`).

Flink's batch scheduler once used it to decide when a multi-input task may start: ANY input ready, or ALL of
them. Flink deprecated it (1.12) and no scheduler reads it any more; fluvial keeps the enum so programs that
name it import, and ExecutionConfig stores it as Flink's does.
"""

from __future__ import annotations

import enum


class InputDependencyConstraint(enum.Enum):
    """Flink 1.x's batch scheduling constraint (ANY or ALL inputs ready); kept for PyFlink programs, with
    nothing to act on here.
    """

    ANY = 0
    ALL = 1
