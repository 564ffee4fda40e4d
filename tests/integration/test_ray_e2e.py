"""Jobs on Ray (`execution.target: ray`) on the session's two-node Ray cluster (`tests/conftest.py`): the same
results as embedded, subtasks in actor processes on both nodes with slot sharing meaning one process, print()
and logs on the client's console, and a job file whose helper module reaches the actors through Ray's runtime
environment (`fluvial run --target ray`)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from fluvial.common import Configuration, Duration
from fluvial.common.errors import JobExecutionException
from fluvial.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.window import TumblingEventTimeWindows
from fluvial.testing import ExecutionMode, collect_job, wait_until
from tests.conftest import HEAD, SECOND
from tests.unit.cli.helpers import fluvial_process

pytestmark = pytest.mark.usefixtures("ray_cluster")

WORDS = [f"w{i % 17}" for i in range(3_000)]


def keyed_counts(env):
    env.set_parallelism(2)
    return (
        env.from_collection([(word, 1) for word in WORDS])
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def windowed_sums(env):
    env.set_parallelism(2)
    events = [(f"k{i % 5}", i * 10, i) for i in range(2_000)]  # (key, timestamp ms, value)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(50)).with_timestamp_assigner(
        EventTime()
    )
    return (
        env.from_collection(events)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda event: event[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
        .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
    )


@pytest.mark.parametrize("build", [keyed_counts, windowed_sums], ids=["keyed", "windowed"])
def test_a_job_gives_the_same_results_on_ray_as_embedded(build):
    embedded = collect_job(build, ExecutionMode.THREADS)
    on_ray = collect_job(build, ExecutionMode.RAY)
    assert Counter(on_ray) == Counter(embedded)
    if build is keyed_counts:
        final = {}
        for word, count in on_ray:
            final[word] = max(final.get(word, 0), count)
        assert final == Counter(WORDS)


class WhereAmI(MapFunction):
    """Tags each record with (vertex, subtask, pid, Ray node) of the subtask that saw it."""

    def __init__(self, vertex: str) -> None:
        self.vertex = vertex

    def open(self, runtime_context):
        import ray

        self.tag = (
            self.vertex,
            runtime_context.get_index_of_this_subtask(),
            os.getpid(),
            ray.util.get_node_ip_address(),
        )

    def map(self, value):
        return value + (self.tag,) if isinstance(value, tuple) else (self.tag,)


def placement_of(second_group: str | None) -> tuple[dict, list[int]]:
    """{(vertex, subtask): (pid, node)} of a source+A chain and a B after a rebalance, and the actors' pids."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration().set_string("execution.target", "ray"))
    env.set_parallelism(2)
    b = env.from_source(NumberSequenceSource(1, 400)).map(WhereAmI("A")).rebalance().map(WhereAmI("B"))
    if second_group is not None:
        b = b.slot_sharing_group(second_group)
    with b.execute_and_collect() as results:
        tags = {tag for record in results for tag in record}
        pids = results._client.cluster.processes.pids
    return {(vertex, subtask): (pid, node) for vertex, subtask, pid, node in tags}, pids


def test_subtasks_run_in_actor_processes_on_both_nodes_and_a_shared_slot_is_one_process():
    where, actor_pids = placement_of(None)
    assert sorted(where) == [("A", 0), ("A", 1), ("B", 0), ("B", 1)]
    for subtask in (0, 1):  # subtask i of A and B share slot i: one actor process
        assert where[("A", subtask)] == where[("B", subtask)]
    assert where[("A", 0)][0] != where[("A", 1)][0]
    assert {pid for pid, _ in where.values()} == set(actor_pids)
    assert {node for _, node in where.values()} == {HEAD, SECOND}  # SPREAD: one TaskManager per node


def test_subtasks_of_another_slot_sharing_group_get_slots_and_processes_of_their_own():
    where, actor_pids = placement_of("other")
    assert len(actor_pids) == 4  # 2 slots per group, 1 slot per TaskManager
    assert len({pid for pid, _ in where.values()}) == 4


class Shout(MapFunction):
    def map(self, value):
        print(f"actor says {value}")
        logging.getLogger("tests.ray.job").warning("actor logs %s", value)
        return value


def test_print_and_logs_of_actors_reach_the_clients_console(capsys, caplog):
    env = StreamExecutionEnvironment.get_execution_environment(Configuration().set_string("execution.target", "ray"))
    env.set_parallelism(2)
    env.from_collection(["a", "b", "c"]).map(Shout()).print()
    with caplog.at_level(logging.WARNING, logger="tests.ray.job"):
        env.execute("console")
    out = capsys.readouterr().out.splitlines()
    assert sorted(line for line in out if line.startswith("actor says")) == [f"actor says {v}" for v in "abc"]
    assert sorted(line.split("> ", 1)[1] for line in out if "> " in line) == ["a", "b", "c"]  # PyFlink's N> prefix
    logged = [r.getMessage() for r in caplog.records if r.name == "tests.ray.job"]
    assert sorted(m.rsplit(" ", 1)[1] for m in logged) == ["a", "b", "c"]
    assert all(m.startswith("[TaskManager ") and " actor logs " in m for m in logged)


def test_a_job_files_own_module_reaches_the_actors_through_the_runtime_environment(tmp_path, ray_cluster):
    """`fluvial run --target ray`, in a process of its own: the job imports `shout` from its own directory, and
    Ray ships it to the actors as a py_modules package (under the cluster's runtime_resources). (On this one
    machine Ray also puts the driver's script directory on the workers' path, which is why the test looks for
    the shipped copy rather than at where `shout` was loaded from.)"""
    (tmp_path / "shout.py").write_text(
        textwrap.dedent("""\
        def shout(value):
            return f"{value.upper()}!"

        def shipped(_):
            import os, sys
            return ",".join(p for p in sys.path if "runtime_resources" in p and os.path.isfile(os.path.join(p, "shout.py")))
        """)
    )
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent("""\
        from fluvial.datastream import StreamExecutionEnvironment
        from shout import shipped, shout

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.from_collection(["a", "b"]).map(shout).print()
        env.from_collection(["x"]).map(shipped).set_parallelism(1).map(lambda paths: f"shipped to {paths}").print()
        env.execute("shipped")
        """)
    )
    process = fluvial_process(
        "run",
        "--target",
        "ray",
        "-D",
        f"ray.address={ray_cluster.address}",
        job,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path.parent,
    )
    out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    lines = out.splitlines()
    assert sorted(line.split("> ", 1)[-1] for line in lines if "!" in line) == ["A!", "B!"]
    shipped = next(line for line in lines if "shipped to" in line).rsplit(" ", 1)[1]
    assert "runtime_resources" in shipped, out


def _ray_processes() -> set[int]:
    """PIDs of this machine's Ray node and worker processes (by command line)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    text = cmdline.read()
            except OSError:
                continue
            if b"fluvial.cluster.ray.local_node" in text or b"raylet" in text or text.startswith(b"ray::"):
                found.add(int(entry))
    return found


@pytest.mark.timeout(120)
def test_a_local_cluster_of_the_jobs_own_is_quiet_and_ends_with_its_process(tmp_path):
    """A job file with `ray.address: local` starts a local cluster of its own (what a job does that finds no
    cluster; here the session's cluster is running, and `auto` would find it): nothing of Ray's on the console;
    and when the client is SIGKILLed — no exit handler runs — the processes of its cluster still end."""
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent("""\
        import sys, time
        from fluvial.common import Configuration
        from fluvial.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration().set_string("execution.target", "ray").set_string("ray.address", "local"))
        env.set_parallelism(1)
        env.from_collection(["one", "two"]).print()
        env.execute("local start")
        print("ready", flush=True)
        time.sleep(600)
        """)
    )
    before = _ray_processes()
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    client = subprocess.Popen(
        [sys.executable, str(job)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=environment,
    )
    try:
        lines = []
        while (line := client.stdout.readline()) and line != "ready\n":
            lines.append(line)
        assert line == "ready\n", client.stderr.read()
        assert sorted(lines) == ["one\n", "two\n"]  # nothing but the job's output
        started = _ray_processes() - before
        assert started, "no Ray process was started"
        directories = _temp_dirs(started)
        client.kill()
        assert client.wait(10) == -9
        _, err = client.communicate()
        assert "ray" not in err.lower(), err  # Ray's start-up went to its log, not the console
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(10)
    wait_until(lambda: not (started & _ray_processes()), timeout=60, what="the local cluster's processes to end")
    for directory in directories:  # its logs stay behind, as Ray's do, when the client is killed outright
        shutil.rmtree(directory, ignore_errors=True)


def _temp_dirs(pids: set[int]) -> set[str]:
    found = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                arguments = cmdline.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        found.update(arg.split("=", 1)[1] for arg in arguments if arg.startswith("--temp-dir=/tmp/fluvial-ray-"))
    return found


def test_a_function_from_a_module_the_actors_cannot_import_fails_the_job_naming_the_module(
    tmp_path, monkeypatch, caplog
):
    """The module is importable here only (put on this process's path after it connected to Ray, and not beside
    a job file): each deployment fails on the actor, which fails the job with the actor's ImportError."""
    (tmp_path / "only_here.py").write_text("def double(value):\n    return 2 * value\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "only_here", raising=False)
    import only_here

    env = StreamExecutionEnvironment.get_execution_environment(Configuration().set_string("execution.target", "ray"))
    env.set_parallelism(2)
    env.from_collection([1, 2, 3]).map(only_here.double).add_sink(lambda value: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute("unimportable")
    assert "No module named 'only_here'" in str(info.value)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert "ship others with ray.working-dir" in caplog.text
