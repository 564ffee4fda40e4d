"""What only process mode has, seen from the client: print() and logging of TaskManager processes reach the
client, a function that cannot be pickled is refused at submission and one that cannot be loaded there fails
its subtask naming the module, no TaskManager process outlives its job
(finished, failed or cancelled: checked in /proc), a TaskManager process writes its threads' stacks on
STACKS_SIGNAL and runs on, modules of the job's own directory and `python.files` are
importable in TaskManager processes (the client's sys.path travels), `local.number-taskmanager` and
`taskmanager.numberOfTaskSlots` keep their meaning, and auto picks threads at parallelism 1, processes above."""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fluvial.common import Configuration
from fluvial.common.errors import InvalidJobError, JobCancelledException, JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.common.thread_stacks import STACKS_SIGNAL
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import ExecutionMode, ScriptedSource, environment, wait_until
from tests.integration.test_failures_e2e import HoldsALock
from tests.processes import alive, descendants

pytestmark = pytest.mark.timeout(60)


def processes(parallelism: int = 2, **keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration()
    for key, value in keys.items():
        configuration.set_string(key, value)
    env = environment(ExecutionMode.PROCESSES, configuration)
    env.set_parallelism(parallelism)
    return env


# -- what TaskManager processes print and log ---------------------------------------------------------------------


class Chatty(MapFunction):
    """Prints to stdout and stderr and logs, naming its process, once per subtask."""

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()
        print(f"opened subtask {self.subtask} in pid {os.getpid()}")
        print(f"warning from subtask {self.subtask}", file=sys.stderr)
        logging.getLogger("tests.chatty").warning("subtask %d logs from pid %d", self.subtask, os.getpid())
        logging.getLogger("tests.chatty").debug("below the level the client runs at: never sent")

    def map(self, value):
        return value


def test_print_in_a_task_manager_process_appears_on_the_clients_stdout_and_stderr(capsys):
    env = processes()
    env.from_source(NumberSequenceSource(1, 100)).map(Chatty()).add_sink(lambda value: None)
    env.execute("chatty")
    captured = capsys.readouterr()
    opened = sorted(line for line in captured.out.splitlines() if line.startswith("opened subtask"))
    assert [line.split(" in pid")[0] for line in opened] == ["opened subtask 0", "opened subtask 1"]
    pids = {int(line.rsplit(" ", 1)[1]) for line in opened}
    assert os.getpid() not in pids and len(pids) == 2  # printed by two other processes, shown here
    assert sorted(line for line in captured.err.splitlines() if line.startswith("warning from")) == [
        "warning from subtask 0",
        "warning from subtask 1",
    ]


def test_logs_of_task_manager_processes_reach_the_clients_logging(caplog):
    caplog.set_level(logging.INFO)  # the client's level, which its TaskManager processes take at start
    env = processes()
    env.from_source(NumberSequenceSource(1, 100)).map(Chatty()).add_sink(lambda value: None)
    env.execute("chatty")
    records = [record for record in caplog.records if record.name == "tests.chatty"]
    found = [re.fullmatch(r"\[TaskManager (\d)\] subtask (\d) logs from pid (\d+)", r.getMessage()) for r in records]
    assert all(found), [r.getMessage() for r in records]
    assert sorted(match[2] for match in found) == ["0", "1"]  # each subtask's record, once
    assert {match[1] for match in found} == {"0", "1"}  # from both TaskManagers, each named
    assert all(
        record.levelno == logging.WARNING and record.process == int(match[3]) != os.getpid()
        for record, match in zip(records, found)
    )
    assert not [r for r in caplog.records if "never sent" in r.getMessage()]


# -- a function that cannot travel --------------------------------------------------------------------------------


def test_a_function_that_cannot_be_pickled_is_refused_at_submission_naming_operator_object_and_fix():
    before = descendants(os.getpid())
    env = processes()
    env.from_collection([1, 2, 3]).map(HoldsALock()).name("guarded map").add_sink(lambda value: None)
    with pytest.raises(InvalidJobError) as info:
        env.execute("cannot travel")
    message = str(info.value)
    assert "'guarded map'" in message  # the operator
    assert "HoldsALock.lock" in message and "_thread.lock" in message  # the object that failed
    assert "open()" in message and "local.taskmanager.mode: thread" in message  # the fixes
    assert not {pid for pid in descendants(os.getpid()) - before if alive(pid)}, "a process started for it"


def test_a_closure_over_a_socket_is_refused_naming_it():
    import socket

    with socket.socket() as connection:
        env = processes()
        env.from_collection([1, 2, 3]).map(lambda value: (connection.fileno(), value)).add_sink(lambda value: None)
        with pytest.raises(InvalidJobError, match=r"'Map'.*socket.*cannot be pickled.*open\(\)"):
            env.execute("closure over a socket")


def test_a_function_from_a_module_task_managers_cannot_import_fails_its_subtask_naming_the_module(tmp_path):
    """The module is loaded from a file that is on no sys.path, so only this process has it: the subtask fails
    with an error naming the module and the fix, and no TaskManager is taken for lost."""
    path = tmp_path / "elsewhere" / "only_here.py"
    path.parent.mkdir()
    path.write_text("def double(value):\n    return 2 * value\n")
    spec = importlib.util.spec_from_file_location("fluvial_test_only_here", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        env = processes()
        env.from_collection([1, 2, 3]).map(module.double).add_sink(lambda value: None)
        with pytest.raises(JobExecutionException) as info:
            env.execute("a module only the client has")
    finally:
        del sys.modules[spec.name]
    message = str(info.value)
    assert "No module named 'fluvial_test_only_here'" in message, message
    assert "importable in TaskManager processes" in message and "add_python_file" in message
    assert "was lost" not in message
    assert isinstance(info.value.__cause__.__cause__, ModuleNotFoundError)


# -- no TaskManager process outlives its job ----------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["finished", "failed", "cancelled"])
def test_no_task_manager_process_outlives_its_job(outcome):
    env = processes()
    if outcome == "finished":
        env.from_source(NumberSequenceSource(1, 10_000)).rebalance().add_sink(lambda value: None)
    elif outcome == "failed":
        env.from_source(NumberSequenceSource(1, 10_000)).map(lambda x: 1 // (x - 5_000)).add_sink(lambda v: None)
    else:
        env.from_source(ScriptedSource([], unbounded=True)).rebalance().add_sink(lambda value: None)
    client = env.execute_async(outcome)
    pids = list(client.cluster.processes.pids)
    assert len(pids) == 2 and os.getpid() not in pids
    if outcome == "cancelled":
        wait_until(lambda: client.get_job_status().result().name == "RUNNING", what="the endless job to run")
        assert all(alive(pid) for pid in pids)
        client.cancel()
    expected = {"finished": type(None), "failed": JobExecutionException, "cancelled": JobCancelledException}
    assert isinstance(client.get_job_execution_result().exception(timeout=30), expected[outcome])
    wait_until(
        lambda: not any(alive(pid) for pid in pids),
        timeout=15,
        what=f"the TaskManager processes {pids} to end with their {outcome} job",
    )


class WaitsForAFile(MapFunction):
    """Holds every record until `path` exists: the job runs, in both processes, for as long as the test wants."""

    def __init__(self, path: str) -> None:
        self.path = path

    def map(self, value):
        while not os.path.exists(self.path):
            time.sleep(0.01)
        return value


def test_task_manager_processes_write_their_stacks_on_the_signal_and_run_on(tmp_path):
    """What the pool sends a process that did not exit before it kills it (`kill_stuck`): a TaskManager process
    has asked for it (the signal's default action would end the process, and the job with it)."""
    go = tmp_path / "go"
    env = processes()
    env.set_restart_strategy(RestartStrategies.no_restart())
    env.from_source(NumberSequenceSource(1, 1_000)).map(WaitsForAFile(str(go))).add_sink(lambda value: None)
    client = env.execute_async("held")
    pids = list(client.cluster.processes.pids)
    wait_until(lambda: client.get_job_status().result().name == "RUNNING", what="the job to run")
    for pid in pids:
        os.kill(pid, STACKS_SIGNAL)
    go.touch()
    assert client.get_job_execution_result().exception(timeout=30) is None
    assert client._job_master.restarts == 0


# -- the client's sys.path travels --------------------------------------------------------------------------------


JOB_WITH_A_LOCAL_MODULE = textwrap.dedent("""
    import os

    from fluvial.common import Configuration
    from fluvial.datastream import StreamExecutionEnvironment

    import shout  # a module of this job's own directory, as a PyFlink job script imports its helpers

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "process"))
    env.set_parallelism(2)
    results = env.from_collection(["a", "b", "c", "d"]).map(shout.shout).map(lambda s: (s, os.getpid()))
    values = sorted(results.execute_and_collect())
    assert os.getpid() not in {pid for _, pid in values}, "the job did not run in TaskManager processes"
    print(*[value for value, _ in values])
""")


def test_modules_of_the_jobs_own_directory_are_importable_in_task_manager_processes(tmp_path):
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "shout.py").write_text("def shout(text):\n    return text.upper() + '!'\n")
    (job_dir / "job.py").write_text(JOB_WITH_A_LOCAL_MODULE)
    pythonpath = os.pathsep.join(p for p in [str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH")] if p)
    # run from another directory: the script's directory is on the client's sys.path, not the working one
    result = subprocess.run(
        [sys.executable, str(job_dir / "job.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=50,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["A!", "B!", "C!", "D!"]


def test_python_files_are_importable_in_task_manager_processes(tmp_path):
    module = tmp_path / "deps" / "river_helpers_in_processes.py"
    module.parent.mkdir()
    module.write_text("def shout(text):\n    return text.upper() + '!'\n")

    def use_helper(value):
        import river_helpers_in_processes

        return river_helpers_in_processes.shout(value), os.getpid()

    env = processes()
    env.add_python_file(str(module))
    results = sorted(env.from_collection(["a", "b", "c", "d"]).map(use_helper).execute_and_collect())
    assert [value for value, _ in results] == ["A!", "B!", "C!", "D!"]
    assert os.getpid() not in {pid for _, pid in results}
    assert "river_helpers_in_processes" not in sys.modules  # imported over there, never here


# -- how many TaskManager processes, with how many slots ---------------------------------------------------------


def pids_of_subtasks(env: StreamExecutionEnvironment, n: int = 3_000) -> tuple[dict[int, int], list[int]]:
    """(subtask index -> the pid that ran it, the pids of the cluster's TaskManager processes)."""

    class WhereAmI(MapFunction):
        def open(self, runtime_context):
            self.where = (runtime_context.get_index_of_this_subtask(), os.getpid())

        def map(self, value):
            return self.where

    with env.from_source(NumberSequenceSource(1, n)).rebalance().map(WhereAmI()).execute_and_collect() as results:
        where = dict(results)
        cluster_pids = list(results._client.cluster.processes.pids)
    return where, cluster_pids


@pytest.mark.parametrize(
    "parallelism, taskmanagers, slots, expected_processes",
    [
        (3, "3", "1", 3),  # one subtask per process
        (2, "1", "2", 1),  # one process with two slots runs both
        (4, None, None, min(os.cpu_count() or 1, 4)),  # default: a process per core, never more than slots needed
        (1, None, None, 1),
    ],
)
def test_number_of_task_managers_and_slots_keep_their_meaning(parallelism, taskmanagers, slots, expected_processes):
    keys = {}
    if taskmanagers is not None:
        keys["local.number-taskmanager"] = taskmanagers
    if slots is not None:
        keys["taskmanager.numberOfTaskSlots"] = slots
    where, cluster_pids = pids_of_subtasks(processes(parallelism, **keys))
    assert len(cluster_pids) == expected_processes
    assert sorted(where) == list(range(parallelism))
    assert set(where.values()) <= set(cluster_pids) and os.getpid() not in where.values()
    assert len(set(where.values())) == min(parallelism, expected_processes)  # the slots are spread over them


def test_too_few_slots_over_the_processes_fails_naming_both_numbers():
    env = processes(4, **{"local.number-taskmanager": "3", "taskmanager.numberOfTaskSlots": "1"})
    env.from_source(NumberSequenceSource(1, 10)).add_sink(lambda value: None)
    with pytest.raises(Exception, match=r"(?s)(?=.*\b4\b)(?=.*\b3\b).*taskmanager.numberOfTaskSlots"):
        env.execute("too few slots")


# -- auto ---------------------------------------------------------------------------------------------------------


def run_where(parallelism: int, map_parallelism: int | None = None) -> set[int]:
    """The pids that ran the map of a job at `parallelism` under the default mode (auto)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    mapped = env.from_collection(list(range(20))).map(lambda value: os.getpid())
    if map_parallelism is not None:
        mapped.set_parallelism(map_parallelism)
    return set(mapped.execute_and_collect())


def test_auto_runs_threads_at_parallelism_one_and_processes_above():
    assert Configuration().get("local.taskmanager.mode") == "auto"  # the default
    assert run_where(1) == {os.getpid()}
    assert os.getpid() not in run_where(2)
    # the job's highest parallelism decides, whichever operator has it
    assert os.getpid() not in run_where(1, map_parallelism=2)
