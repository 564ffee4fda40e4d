"""Run a job in every execution mode fluvial has: the same test, the same answer, whether TaskManagers are
threads of this process, processes of this machine, or Ray actors (Bytewax runs its tests so).

    @pytest.mark.parametrize("mode", execution_modes())
    def test_word_count(mode):
        result = run_job(build_word_count, mode)
"""

from __future__ import annotations

import enum
import importlib.util
from collections.abc import Callable
from typing import Any

from fluvial.common.configuration import Configuration


class ExecutionMode(enum.Enum):
    """Where a test job's TaskManagers run: THREADS, PROCESSES or RAY (`run_job(..., mode=...)`)."""

    THREADS = "thread"  # TaskManagers as threads of this process
    PROCESSES = "process"  # TaskManagers as processes of this machine
    RAY = "ray"  # TaskManagers as Ray actors

    def __str__(self) -> str:
        return self.value  # so pytest names parametrized tests test_x[thread], test_x[process]


AVAILABLE = (ExecutionMode.THREADS, ExecutionMode.PROCESSES, ExecutionMode.RAY)


def execution_modes(*, ray: bool = False) -> list[ExecutionMode]:
    """The modes this version runs jobs in (for `pytest.mark.parametrize`): threads and processes, and with
    `ray=True` Ray too when the `ray` package is installed (`pip install 'fluvial[ray]'`). Ray is asked for rather
    than given by default because each Ray job starts its TaskManager actors (about half a second), and a first
    Ray job in a process without a cluster starts a local one (seconds): the modes a suite runs every job test in
    stay fast, and the tests that are about Ray ask for it."""
    modes = [ExecutionMode.THREADS, ExecutionMode.PROCESSES]
    if ray and importlib.util.find_spec("ray") is not None:
        modes.append(ExecutionMode.RAY)
    return modes


def environment(mode: ExecutionMode | None, configuration: Configuration | None = None) -> Any:
    """A StreamExecutionEnvironment whose jobs run in `mode` (None: as `configuration` or the default says)."""
    from fluvial.datastream import StreamExecutionEnvironment

    if mode is not None and mode not in AVAILABLE:
        raise ValueError(
            f"execution mode {mode.value!r} is not available in this version; use one of "
            f"{', '.join(m.value for m in AVAILABLE)}"
        )
    configuration = Configuration(configuration) if configuration is not None else Configuration()
    if mode is ExecutionMode.RAY:  # the Ray cluster ray is initialised with, else one found or started
        configuration.set_string("execution.target", "ray")
    elif mode is not None:
        configuration.set_string("local.taskmanager.mode", mode.value)
    return StreamExecutionEnvironment.get_execution_environment(configuration)


def run_job(
    build: Callable[[Any], None],
    mode: ExecutionMode,
    configuration: Configuration | None = None,
    job_name: str | None = None,
    timeout: float = 120.0,
) -> Any:
    """Build the job on an environment of `mode` (`build(env)` adds sources, operators and sinks), run it to its
    end and return its JobExecutionResult; a failed job raises JobExecutionException."""
    env = environment(mode, configuration)
    build(env)
    return env.execute_async(job_name).get_job_execution_result().result(timeout=timeout)


def collect_job(
    build: Callable[[Any], Any], mode: ExecutionMode, configuration: Configuration | None = None, timeout: float = 120.0
) -> list:
    """Every record of the stream `build(env)` returns, collected to the client (execute_and_collect)."""
    env = environment(mode, configuration)
    stream = build(env)
    with stream.execute_and_collect() as results:
        return list(results)
