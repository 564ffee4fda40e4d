"""Parallelism and execution mode together, for tests whose jobs also vary in parallelism: parallelism 1 runs
in threads (one TaskManager runs the whole job; a single TaskManager process would add nothing but a start),
parallelism 2 in both modes. `@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)`."""

from __future__ import annotations

import pytest

from fluvial.testing import ExecutionMode

PARALLELISM_AND_MODE = [
    pytest.param(1, ExecutionMode.THREADS, id="p1-thread"),
    pytest.param(2, ExecutionMode.THREADS, id="p2-thread"),
    pytest.param(2, ExecutionMode.PROCESSES, id="p2-process"),
]
