"""execution_modes(): threads and processes by default, Ray when asked for and installed; environment(mode)
configures each mode's target."""

from __future__ import annotations

import importlib.util

import pytest

from fluvial.testing import ExecutionMode, environment, execution_modes


def test_ray_is_a_mode_when_asked_for_and_installed(monkeypatch):
    assert execution_modes() == [ExecutionMode.THREADS, ExecutionMode.PROCESSES]
    assert execution_modes(ray=True) == [ExecutionMode.THREADS, ExecutionMode.PROCESSES, ExecutionMode.RAY]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)  # as without the ray package
    assert execution_modes(ray=True) == [ExecutionMode.THREADS, ExecutionMode.PROCESSES]


@pytest.mark.parametrize(
    "mode, key, value",
    [
        (ExecutionMode.THREADS, "local.taskmanager.mode", "thread"),
        (ExecutionMode.PROCESSES, "local.taskmanager.mode", "process"),
        (ExecutionMode.RAY, "execution.target", "ray"),
    ],
)
def test_each_mode_configures_where_its_jobs_run(mode, key, value):
    configuration = environment(mode).get_configuration()
    assert configuration.get_string(key) == value
    if mode is ExecutionMode.RAY:
        assert not configuration.contains_key("local.taskmanager.mode")  # refused on Ray
