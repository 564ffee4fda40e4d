"""`fluvial sql -m HOST:PORT -f script.sql` against a real session cluster (started here on a free port, HOME a
temporary directory, stopped with `fluvial cluster stop`, which the fixture checks leaves no process behind):
DDL stays in the client, the INSERT INTO runs as a job on the cluster named as Flink names it (seen through
the REST API, its rows in the sink's files), the SELECT runs there too and its rows come back to the client in
the script's result mode; SHOW JOBS and STOP JOB act on the cluster's jobs. And a cluster that is not there: a one-line error naming the address and how to
start one."""

from __future__ import annotations

import re
import textwrap

import pytest

from fluvial.testing import wait_until
from services.server import refusing_port
from tests.integration.test_session_cluster import fluvial, start_cluster, stop_cluster

pytestmark = pytest.mark.timeout(90)

SCRIPT = """\
CREATE TABLE numbers (n INT) WITH ('connector' = 'datagen', 'fields.n.kind' = 'sequence',
  'fields.n.start' = '1', 'fields.n.end' = '6', 'scan.parallelism' = '1');
CREATE TABLE doubled (n INT, twice INT) WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'csv');
SHOW TABLES;
INSERT INTO doubled SELECT n, n * 2 FROM numbers;
SET 'sql-client.execution.result-mode' = '{mode}';
SELECT n % 2 AS odd, COUNT(*) AS c FROM numbers GROUP BY n % 2;
"""


def test_sql_script_runs_its_insert_and_select_as_jobs_on_the_session_cluster(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cluster = start_cluster(home, "--taskmanagers", "1", "--slots", "4")
    try:
        sink = tmp_path / "doubled"
        script = tmp_path / "script.sql"
        script.write_text(SCRIPT.format(sink=sink, mode="tableau"))
        done = fluvial(home, "sql", "-m", cluster.address, "-f", script)
        assert done.returncode == 0, done.stdout + done.stderr
        out = done.stdout
        assert "| table name |" in out and "|    doubled |" in out and "|    numbers |" in out
        assert "[INFO] SQL update statement has been successfully submitted to the cluster:" in out
        # the SELECT's changelog, printed as Flink's tableau prints it, its rows from the cluster
        assert "| op |         odd |                    c |" in out
        assert "| +U |           0 |                    3 |" in out
        assert "| +U |           1 |                    3 |" in out

        def jobs():
            return {job["name"]: job for job in cluster.get("/jobs/overview")["jobs"]}

        insert = "insert-into_default_catalog.default_database.doubled"
        wait_until(lambda: jobs().get(insert, {}).get("state") == "FINISHED", timeout=30)
        assert jobs()["collect"]["state"] == "FINISHED"
        rows = sorted(line for path in sink.rglob("*") if path.is_file() for line in path.read_text().split())
        assert rows == sorted(f"{n},{2 * n}" for n in range(1, 7))

        listed = fluvial(home, "list", "-a", "-m", cluster.address)
        assert insert in listed.stdout, listed.stdout + listed.stderr

        # the same SELECT in the changelog and table result modes (stdout is a pipe here: printed as it ends), the
        # cluster named by --jobmanager, and by Flink's keys with -D
        host, port = cluster.address.rsplit(":", 1)
        for mode, target, expected in (
            ("changelog", ["--jobmanager", cluster.address], [" op ", " +I            1                    1"]),
            (
                "table",
                ["-D", "execution.target=remote", "-D", f"rest.address={host}", "-D", f"rest.port={port}"],
                ["| odd | c |", "|   1 | 3 |", "|   0 | 3 |"],
            ),
        ):
            script.write_text(SCRIPT.format(sink=tmp_path / mode, mode=mode).replace("INSERT INTO", "-- INSERT INTO"))
            done = fluvial(home, "sql", *target, "-f", script)
            assert done.returncode == 0, done.stdout + done.stderr
            for text in expected:
                assert text in done.stdout, done.stdout
        assert [job["name"] for job in cluster.get("/jobs/overview")["jobs"]].count("collect") == 3

        # an unbounded INSERT runs on after the client ends; SHOW JOBS lists it, STOP JOB cancels it
        script.write_text(
            "CREATE TABLE g (n BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '5');\n"
            "CREATE TABLE nowhere (n BIGINT) WITH ('connector' = 'blackhole');\n"
            "INSERT INTO nowhere SELECT n FROM g;\nSHOW JOBS;\n"
        )
        done = fluvial(home, "sql", "-m", cluster.address, "-f", script)
        assert done.returncode == 0, done.stdout + done.stderr
        job_id = re.search(r"Job ID: ([0-9a-f]{32})", done.stdout).group(1)
        assert re.search(
            rf"\| {job_id} \| insert-into_default_catalog.default_database.nowhere \| +\w+ \|", done.stdout
        )
        assert cluster.get(f"/jobs/{job_id}")["state"] in ("CREATED", "RUNNING")
        script.write_text(f"STOP JOB '{job_id}';\n")
        done = fluvial(home, "sql", "-m", cluster.address, "-f", script)
        assert done.returncode == 0 and "[INFO] Execute statement succeeded." in done.stdout, done.stdout + done.stderr
        wait_until(lambda: cluster.get(f"/jobs/{job_id}")["state"] == "CANCELED", timeout=30)
        done = fluvial(home, "sql", "-m", cluster.address, "-f", script)
        assert done.returncode == 1 and f"job {job_id} is CANCELED already: there is nothing to stop" in done.stdout

        # a statement that fails ends the script there, with exit code 1
        script.write_text("SELECT nosuch FROM (VALUES (1)) AS t(x);\nSELECT 'never run';\n")
        done = fluvial(home, "sql", "-m", cluster.address, "-f", script)
        assert done.returncode == 1
        assert "[ERROR] ValidationException: From line 1, column 8: Column 'nosuch' not found" in done.stdout
        assert "never run" not in done.stdout and "stopped at the statement that failed" in done.stderr
    finally:
        stop_cluster(cluster)


def test_sql_against_a_cluster_that_is_not_there_names_the_address_and_how_to_start_one(tmp_path):
    script = tmp_path / "script.sql"
    script.write_text(textwrap.dedent("SELECT 1;\n"))
    with refusing_port() as port:
        done = fluvial(tmp_path, "sql", "-m", f"127.0.0.1:{port}", "-f", script, timeout=30)
    assert done.returncode == 1
    assert f"no session cluster answers at http://127.0.0.1:{port}" in done.stderr
    assert "fluvial cluster start" in done.stderr
    assert done.stdout == ""
