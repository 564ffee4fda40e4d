"""Integration tests run real jobs; a test that takes the `mode` fixture runs once per execution mode
(`test_x[thread]`, `test_x[process]`), so every job shape is checked with TaskManagers as threads of this
process and as processes of this machine.

A test that runs in process mode observes its job across processes: execute_and_collect, files under
tmp_path, or a `fluvial.testing.EventLog` — never a module-level list or a class attribute, which only the
function copies of this process would fill."""

from __future__ import annotations

import pytest

from fluvial.testing import ExecutionMode, execution_modes


@pytest.fixture(params=execution_modes(), ids=str)
def mode(request) -> ExecutionMode:
    return request.param
