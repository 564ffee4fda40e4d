"""Savepoints (`checkpoint/savepoint.py`): where one goes, its layout, reading it back — also after the directory
was moved — and the errors that name what to do."""

from __future__ import annotations

import shutil

import pytest

from fluvial.checkpoint.savepoint import read_savepoint, savepoint_storage, savepoint_target
from fluvial.checkpoint.storage import CheckpointMetadata, OperatorState, SubtaskState, read_state_handle
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ResourceError

JOB = "0123456789abcdef0123456789abcdef"


def test_the_directory_given_wins_then_the_configured_one() -> None:
    configured = Configuration().set_string("state.savepoints.dir", "file:///configured")
    assert savepoint_target("file:///given", configured) == "file:///given"
    assert savepoint_target(None, configured) == "file:///configured"
    assert savepoint_target("", configured) == "file:///configured"


def test_no_directory_anywhere_is_an_error_naming_both_fixes() -> None:
    for configuration in (None, Configuration()):
        with pytest.raises(ResourceError) as info:
            savepoint_target(None, configuration)
        assert "trigger_savepoint('/path/to/savepoints')" in str(info.value)
        assert "state.savepoints.dir" in str(info.value)


def write_savepoint(directory: str, checkpoint_id: int = 3) -> str:
    storage = savepoint_storage(directory, JOB)
    handle = storage.write_state(checkpoint_id, "op-0-op", b"operator lists")
    state = OperatorState("op", 1, 128, {0: SubtaskState(operator=[handle])})
    return storage.write_metadata(checkpoint_id, CheckpointMetadata(checkpoint_id, 99, JOB, True, {"op": state}))


def test_a_savepoint_is_a_chk_directory_under_the_jobs_prefix_and_reads_back(tmp_path) -> None:
    path = write_savepoint(str(tmp_path))
    assert path.rstrip("/").endswith(f"savepoint-{JOB[:8]}/chk-3")
    metadata = read_savepoint(path)
    assert metadata.checkpoint_id == 3 and metadata.is_savepoint and metadata.job_id == JOB
    (handle,) = metadata.operator_states["op"].subtask_states[0].operator
    assert read_state_handle(handle) == b"operator lists"


def test_a_moved_savepoint_restores_from_its_new_place(tmp_path) -> None:
    write_savepoint(str(tmp_path / "first"))
    moved = shutil.move(str(tmp_path / "first" / f"savepoint-{JOB[:8]}"), str(tmp_path / "elsewhere"))
    metadata = read_savepoint(f"{moved}/chk-3")
    (handle,) = metadata.operator_states["op"].subtask_states[0].operator
    assert read_state_handle(handle) == b"operator lists"


def test_a_path_without_a_savepoint_is_an_error_naming_it_and_the_fix(tmp_path) -> None:
    with pytest.raises(ResourceError) as info:
        read_savepoint(str(tmp_path / "nothing-here"))
    assert "nothing-here" in str(info.value) and "execution.savepoint.path" in str(info.value)
    assert "trigger_savepoint returned" in str(info.value)
