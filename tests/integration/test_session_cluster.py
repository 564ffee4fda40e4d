"""A session cluster as a user drives it, every step a `fluvial` process of its own: `cluster start` on a free
port, jobs submitted with `run -m` (detached and attached, with their progress, results and failures), `list`,
`savepoint`, `cancel`, `cluster stop` — and afterwards no process of the cluster is left. Also: a job importing a
module next to it (records of its class cross TaskManager processes), `execute_and_collect` against the cluster,
401 without the token, a job that cannot fit, and a TaskManager SIGKILLed under a checkpointed job, which fails
over and commits its output exactly once. HOME is a temporary directory: the cluster file goes there."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from fluvial.cluster.session.cluster_file import ClusterRecord, ProcessRecord
from fluvial.testing import wait_until
from fluvial.web.history_server import HistoryServer
from tests.faults.test_process_kill import assert_exactly_once, committed_records, completed_checkpoints
from tests.integration.rest_client import http

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTED_JOB = ROOT / "tests" / "faults" / "checkpointed_job.py"
JOB_ID = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")

pytestmark = pytest.mark.timeout(90)


def fluvial(
    home: Path, *args: object, cwd: Path | None = None, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess:
    """`python -m fluvial ARGS...` with HOME=`home` (and `env` on top), its output captured."""
    environment = {key: value for key, value in os.environ.items() if key != "FLUVIAL_TOKEN"}
    environment.update(HOME=str(home), PYTHONPATH=str(ROOT), **env)
    return subprocess.run(
        [sys.executable, "-m", "fluvial", *map(str, args)],
        cwd=cwd or home,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def job_file(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(body))
    return path


@dataclass
class Cluster:
    home: Path
    record: ClusterRecord

    @property
    def address(self) -> str:
        return self.record.address

    def get(self, path: str):
        return http("GET", f"{self.record.rest_url}/{path.lstrip('/')}").body

    def run(self, *args: object, **env: str) -> subprocess.CompletedProcess:
        return fluvial(self.home, "run", "-m", self.address, *args, **env)


def start_cluster(home: Path, *options: object) -> Cluster:
    started = fluvial(home, "cluster", "start", "--port", "0", *options)
    assert started.returncode == 0, started.stderr
    record = ClusterRecord.from_json((home / ".fluvial" / "cluster.json").read_text())
    assert f"Dashboard and REST API: {record.rest_url}" in started.stdout
    return Cluster(home, record)


def descendants(pid: int) -> list[ProcessRecord]:
    """Every live process below `pid` (children, their children, ...), read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
            except (OSError, IndexError):
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return [ProcessRecord.of(child) for child in found]


def stop_cluster(cluster: Cluster) -> None:
    """`fluvial cluster stop`, then: every recorded process and every process below the JobManager has exited."""
    jobmanager = cluster.record.jobmanager.pid
    # every recorded process is provably the cluster's (what `stop` checks before it signals one)
    current = ClusterRecord.from_json((cluster.home / ".fluvial" / "cluster.json").read_text())
    assert current.cluster_id and all(process.belongs_to(current.cluster_id) for process in current.processes)
    below = descendants(jobmanager)
    assert len(below) >= len(cluster.record.taskmanagers)  # the TaskManagers, and the launcher they are forked from
    stopped = fluvial(cluster.home, "cluster", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "Session cluster stopped." in stopped.stdout
    left = [p.pid for p in [*cluster.record.processes, *below] if p.alive()]
    assert left == [], f"processes of the cluster still running: {left}"
    assert not [p for p in descendants(jobmanager)]
    assert not (cluster.home / ".fluvial" / "cluster.json").exists()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = start_cluster(tmp_path_factory.mktemp("home"), "--taskmanagers", "2", "--slots", "2")
    yield started
    stop_cluster(started)


ENDLESS = """\
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.testing import ScriptedSource
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(60_000)
env.from_source(ScriptedSource(list(range(100)), unbounded=True), source_name="numbers") \\
    .key_by(lambda v: v % 4).reduce(lambda a, b: a + b).name("sum").print()
env.execute("endless")
"""


def test_start_run_detached_list_savepoint_cancel_and_stop_leave_no_process_behind(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cluster = start_cluster(home, "-D", f"jobmanager.archive.fs.dir={tmp_path / 'archive'}")
    cluster_file = home / ".fluvial" / "cluster.json"
    assert oct(cluster_file.stat().st_mode & 0o777) == "0o600"
    again = fluvial(home, "cluster", "start", "--port", "0")
    assert again.returncode == 1 and "a session cluster is already running" in again.stderr

    submitted = cluster.run("-d", job_file(tmp_path, "endless.py", ENDLESS))
    assert submitted.returncode == 0, submitted.stderr
    job_id = JOB_ID.search(submitted.stdout).group(1)
    wait_until(lambda: _all_running(cluster, job_id), timeout=30, what="the detached job running")

    listed = fluvial(home, "list")
    assert re.search(rf"\d\d\.\d\d\.\d{{4}} \d\d:\d\d:\d\d : {job_id} : endless \(RUNNING\)", listed.stdout)
    assert "No scheduled jobs." in listed.stdout

    savepoint = fluvial(home, "savepoint", job_id, tmp_path / "savepoints")
    assert savepoint.returncode == 0, savepoint.stderr
    path = re.search(r"Savepoint completed\. Path: (\S+)", savepoint.stdout).group(1)
    assert (Path(path.removeprefix("file://")) / "_metadata").exists()

    cancelled = fluvial(home, "cancel", job_id)
    assert cancelled.returncode == 0 and f"Cancelled job {job_id}." in cancelled.stdout
    wait_until(
        lambda: f"{job_id} : endless (CANCELED)" in fluvial(home, "list", "-a").stdout,
        timeout=30,
        what="the job listed as cancelled",
    )

    restored = cluster.run("-d", "-s", path, job_file(tmp_path, "endless.py", ENDLESS))  # -s travels with the job
    assert restored.returncode == 0, restored.stderr
    restored_id = JOB_ID.search(restored.stdout).group(1)
    wait_until(lambda: _all_running(cluster, restored_id), timeout=30, what="the restored job running")
    assert cluster.get(f"jobs/{restored_id}/checkpoints")["counts"]["restored"] == 1
    stop_cluster(cluster)  # it cancels the job that still runs

    # the cluster has stopped; the history server serves the job it archived when it was cancelled
    history = HistoryServer([str(tmp_path / "archive")], "127.0.0.1", 0, 1000).start()
    try:
        jobs = http("GET", f"{history.address}/jobs/overview").body["jobs"]
        assert (job_id, "endless", "CANCELED") in [(job["jid"], job["name"], job["state"]) for job in jobs]
        assert http("GET", f"{history.address}/jobs/{job_id}").body["state"] == "CANCELED"
    finally:
        history.stop()


def _all_running(cluster: Cluster, job_id: str) -> bool:
    job = cluster.get(f"jobs/{job_id}")
    return job["state"] == "RUNNING" and all(vertex["status"] == "RUNNING" for vertex in job["vertices"])


def test_an_attached_job_shows_its_progress_and_returns_its_result(cluster, tmp_path):
    job = job_file(
        tmp_path,
        "counting.py",
        """\
        import time
        from fluvial.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        def slow(value):
            time.sleep(0.0005)
            return value
        env.from_collection(list(range(2000))).map(slow).name("slow").key_by(lambda v: v % 2) \
            .map(lambda v: v).name("same").print()
        result = env.execute("counting")
        print("result:", result.get_job_id(), result.get_net_runtime() > 0)
        """,
    )
    done = cluster.run(job)
    assert done.returncode == 0, done.stderr
    job_id = JOB_ID.search(done.stdout).group(1)
    assert f"result: {job_id} True" in done.stdout
    assert f"Job counting ({job_id}) is RUNNING" in done.stderr  # a line per state change: stderr is no terminal
    assert re.search(
        rf"Job counting \({job_id}\) ended FINISHED after [\d.]+ s: Source: Collection Source -> slow: "
        r"0 in, 2,000 out; same -> Print to Std\. Out: 2,000 in, 0 out; checkpoints 0 completed",
        done.stderr,
    ), done.stderr


def test_an_attached_job_that_fails_exits_1_with_the_users_frames(cluster, tmp_path):
    job = job_file(
        tmp_path,
        "failing.py",
        """\
        from fluvial.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        def boom(value):
            if value == 3:
                raise ValueError(f"bad value {value}")
            return value
        env.from_collection([1, 2, 3, 4]).map(boom).name("boom").print()
        env.execute("failing")
        """,
    )
    done = cluster.run("-p", "1", job)
    assert done.returncode == 1
    assert "error: Job 'failing' (" in done.stderr and "operator 'boom'" in done.stderr
    assert "raised ValueError: bad value 3" in done.stderr
    assert f'File "{job}", line 5, in boom' in done.stderr
    assert "fluvial/runtime" not in done.stderr  # no internal frames without --verbose


def test_a_job_importing_a_module_next_to_it_collects_its_records(cluster, tmp_path):
    job_file(
        tmp_path,
        "shapes.py",
        """\
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class Point:
            x: int
            y: int

        def point(value):
            return Point(value, value * value)
        """,
    )
    job = job_file(
        tmp_path,
        "geometry.py",
        """\
        from fluvial.datastream import StreamExecutionEnvironment
        from shapes import Point, point
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        points = env.from_collection(list(range(40))).map(point).key_by(lambda p: p.x % 4) \\
            .map(lambda p: (type(p).__module__, isinstance(p, Point), p.x, p.y))
        rows = sorted(points.execute_and_collect(), key=lambda row: row[2])
        print("rows:", len(rows), all(r[:2] == ("shapes", True) for r in rows), sum(r[3] for r in rows))
        """,
    )
    done = cluster.run(job)
    assert done.returncode == 0, done.stderr
    assert f"rows: 40 True {sum(v * v for v in range(40))}" in done.stdout


def test_without_the_token_a_submission_gets_401_naming_where_tokens_come_from(cluster, tmp_path):
    job = job_file(
        tmp_path,
        "tiny.py",
        """\
        from fluvial.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        env.execute("tiny")
        """,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = fluvial(elsewhere, "run", "-m", cluster.address, job)
    assert refused.returncode == 1
    assert "refused POST /jobs: it needs the cluster's access token" in refused.stderr
    assert "cluster.json does not exist" in refused.stderr and "FLUVIAL_TOKEN is not set" in refused.stderr
    wrong = fluvial(elsewhere, "run", "-m", cluster.address, job, FLUVIAL_TOKEN="not-the-token")
    assert wrong.returncode == 1 and "the token in FLUVIAL_TOKEN was refused" in wrong.stderr
    right = fluvial(elsewhere, "run", "-m", cluster.address, job, FLUVIAL_TOKEN=cluster.record.token)
    assert right.returncode == 0, right.stderr


def test_a_job_that_can_never_fit_is_refused_naming_both_numbers(cluster, tmp_path):
    job = job_file(
        tmp_path,
        "wide.py",
        """\
        from fluvial.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        env.execute("wide")
        """,
    )
    done = cluster.run("-p", "9", job)
    assert done.returncode == 1
    assert "job 'wide' needs 9 task slots" in done.stderr
    assert "the cluster has 4 (2 TaskManagers with 2 slots each)" in done.stderr


@pytest.mark.timeout(150)
def test_a_task_manager_killed_under_a_checkpointed_job_is_replaced_and_the_output_is_exactly_once(cluster, tmp_path):
    n = 40_000
    checkpoints, out = tmp_path / "chk", tmp_path / "out"
    # NumberSequenceSource → tag by subtask → key_by → per-key count → FileSink, a checkpoint every 50 ms
    submitted = cluster.run("-d", CHECKPOINTED_JOB, f"file://{checkpoints}", out, 2, n, 1024, "hashmap")
    assert submitted.returncode == 0, submitted.stderr
    job_id = JOB_ID.search(submitted.stdout).group(1)
    wait_until(lambda: max(completed_checkpoints(checkpoints), default=0) >= 2, timeout=60, what="two checkpoints")
    assert cluster.get(f"jobs/{job_id}")["state"] == "RUNNING", "the job ended before a TaskManager was killed"
    victim = cluster.record.taskmanagers[1]
    os.kill(victim.pid, signal.SIGKILL)
    wait_until(
        lambda: cluster.get(f"jobs/{job_id}")["state"] in ("FINISHED", "FAILED", "CANCELED"),
        timeout=120,
        what="the job's end",
    )
    assert cluster.get(f"jobs/{job_id}")["state"] == "FINISHED"
    assert cluster.get(f"jobs/{job_id}/metrics?get=numRestarts") == [{"id": "numRestarts", "value": "1"}]
    assert_exactly_once(committed_records(out)[0], n)
    cluster_file = cluster.home / ".fluvial" / "cluster.json"

    def recorded_pids() -> list[int]:
        return [process.pid for process in ClusterRecord.from_json(cluster_file.read_text()).taskmanagers]

    wait_until(lambda: victim.pid not in recorded_pids(), timeout=10, what="the replacement's pid in cluster.json")
    cluster.record = ClusterRecord.from_json(cluster_file.read_text())  # the processes stop_cluster checks
    assert len(cluster.record.taskmanagers) == 2 and all(p.alive() for p in cluster.record.taskmanagers)
    assert cluster.get("overview")["slots-available"] == 4
