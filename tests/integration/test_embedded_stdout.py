"""What an embedded job's TaskManager processes print reaches the terminal and the dashboard's stdout page of
each TaskManager (a copy in `job-<id>.out` of the log directory, as Flink's taskmanager.out), and each one's
log page shows its own records of the job's shared log file (`?all`: every record); a TaskManager thread's
stdout page says where its output went instead."""

from __future__ import annotations

import logging

import pytest

from fluvial.common import Configuration
from fluvial.testing import Pause, ScriptedSource, wait_until
from tests.integration.rest_client import http

pytestmark = pytest.mark.timeout(60)


def shout(word: str) -> str:
    """Logs under fluvial's logger, so that the record lands in the job's log file, marked with its TaskManager."""
    logging.getLogger("fluvial.tests.words").warning("shouting %s", word)
    return word.upper()


def served(tmp_path, mode: str):
    from fluvial.datastream import StreamExecutionEnvironment

    configuration = (
        Configuration()
        .set_string("rest.port", "0")
        .set_string("env.log.dir", str(tmp_path / "log"))
        .set_string("local.taskmanager.mode", mode)
    )
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    release = tmp_path / "release"
    script = ["river", "delta", "delta", "river", Pause(str(release))]
    env.from_source(ScriptedSource(script, unbounded=True), source_name="words").map(shout).print()
    return env.execute_async("printing"), release


def stdout_pages(client) -> dict[str, str]:
    managers = http("GET", f"{client.web.address}/taskmanagers").body["taskmanagers"]
    return {m["id"]: http("GET", f"{client.web.address}/taskmanagers/{m['id']}/stdout").body for m in managers}


def log_pages(client, query: str = "") -> list[str]:
    managers = http("GET", f"{client.web.address}/taskmanagers").body["taskmanagers"]
    return [http("GET", f"{client.web.address}/taskmanagers/{m['id']}/log{query}").body for m in managers]


def record_headers(page: str) -> list[str]:
    return [line for line in page.splitlines() if line[:4].isdigit()]


def test_taskmanager_processes_output_and_records_are_on_their_own_pages(tmp_path, capfd):
    client, release = served(tmp_path, "process")
    try:
        wait_until(
            lambda: (
                {"RIVER", "DELTA"}
                <= {line.split("> ")[-1] for page in stdout_pages(client).values() for line in page.splitlines()}
            ),
            what="the printed words on the TaskManagers' stdout pages",
        )
        wait_until(lambda: any(record_headers(page) for page in log_pages(client)), what="records on a log page")
        for index, page in enumerate(log_pages(client)):  # each TaskManager's own records, from the shared file
            assert all(f" - [TaskManager {index}] " in line for line in record_headers(page)), page
        everything = log_pages(client, "?all")[0]
        assert "shouting" in everything and "TaskManager 0 registered" in everything  # the JobMaster's too
    finally:
        release.touch()
        client.cancel()
        wait_until(lambda: client.get_job_execution_result().done(), what="the job to end")
        client.web.stop()
    out = (tmp_path / "log" / f"job-{client.get_job_id()}.out").read_text()
    assert "RIVER" in out and "DELTA" in out
    assert "RIVER" in capfd.readouterr().out  # the terminal has it too


def test_a_taskmanager_threads_page_says_where_its_output_went(tmp_path):
    client, release = served(tmp_path, "thread")
    try:
        wait_until(lambda: stdout_pages(client), what="the TaskManagers listed")
        (page,) = stdout_pages(client).values()
        assert "local.taskmanager.mode thread" in page and "terminal" in page
    finally:
        release.touch()
        client.cancel()
        wait_until(lambda: client.get_job_execution_result().done(), what="the job to end")
        client.web.stop()
