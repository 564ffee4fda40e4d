"""Metrics of a running job on `metrics.reporter.prom.port`: Prometheus text that parses, with Flink's names,
counters that grow as the job reads on, and figures equal to the records the job processed."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fluvial.testing import execution_modes, wait_until
from tests.integration.rest_client import serve_job

FIRST, SECOND = 300, 200


def scrape(address: str) -> dict[str, list]:
    with urllib.request.urlopen(f"{address}/metrics", timeout=30) as response:  # noqa: S310 - loopback
        text = response.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def total(samples: dict[str, list], name: str, **labels: str) -> float:
    return sum(
        sample.value
        for sample in samples.get(name, [])
        if all(sample.labels.get(key) == value for key, value in labels.items())
    )


@pytest.mark.parametrize("mode", execution_modes(), ids=lambda mode: mode.value)
def test_prometheus_figures_match_the_records_and_grow(mode, tmp_path):
    served = serve_job(
        mode,
        str(tmp_path),
        "metrics job",
        records=FIRST,
        then=SECOND,
        checkpoint_interval="100 ms",
        **{"metrics.reporter.prom.port": "0", "metrics.fetcher.update-interval": "100 ms"},
    )
    address = served.client.web.prometheus_address
    try:

        def figures() -> dict[str, float]:
            samples = scrape(address)
            return {
                "source out": total(samples, "flink_taskmanager_job_task_numRecordsOut", task_name="Source:_numbers"),
                "double in": total(samples, "flink_taskmanager_job_task_numRecordsIn", task_name="double"),
                "double op in": total(
                    samples, "flink_taskmanager_job_task_operator_numRecordsIn", operator_name="double"
                ),
                "user seen": total(samples, "flink_taskmanager_job_task_operator_records_seen", operator_name="double"),
                "sum in": total(samples, "flink_taskmanager_job_task_operator_numRecordsIn", operator_name="sum"),
                "sink in": total(samples, "flink_taskmanager_job_task_operator_numRecordsIn", operator_name="discard"),
                "checkpoints": total(samples, "flink_jobmanager_job_numberOfCompletedCheckpoints"),
                "uptime": total(samples, "flink_jobmanager_job_uptime"),
            }

        first = {"source out", "double in", "double op in", "user seen", "sum in", "sink in"}
        wait_until(
            lambda: all(figures()[name] == FIRST for name in first) and figures()["checkpoints"] >= 1,
            timeout=30,
            what=f"every figure at {FIRST} records",
        )
        before = figures()
        samples = scrape(address)
        assert samples["flink_taskmanager_job_task_busyTimeMsPerSecond"], "task time gauges are reported"
        assert {
            s.labels["subtask_index"]
            for s in samples["flink_taskmanager_job_task_operator_numRecordsIn"]
            if s.labels["operator_name"] == "double"
        } == {"0", "1"}
        served.release()  # the source reads SECOND more records
        wait_until(
            lambda: all(figures()[name] == FIRST + SECOND for name in first),
            timeout=30,
            what=f"every figure at {FIRST + SECOND} records",
        )
        after = figures()
        assert after["checkpoints"] > before["checkpoints"] and after["uptime"] > before["uptime"]
    finally:
        served.stop()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode", execution_modes(), ids=lambda mode: mode.value)
def test_bytes_are_counted_between_processes_and_not_within_one(mode, tmp_path):
    """numBytesIn/Out count what remote channels serialize (Source -> double rebalances, double -> sum is keyed:
    across the two TaskManager processes some of it crosses); in one process nothing is serialized: 0."""
    served = serve_job(
        mode,
        str(tmp_path),
        "bytes job",
        records=FIRST,
        **{"metrics.reporter.prom.port": "0", "metrics.fetcher.update-interval": "100 ms"},
    )
    address = served.client.web.prometheus_address
    remote = mode.value == "process"
    try:
        vertices = {vertex["name"]: vertex["id"] for vertex in served.get(f"jobs/{served.job_id}").body["vertices"]}
        double, total_sum = vertices["double"], vertices["sum -> discard"]

        def rest(vertex: str, name: str) -> int:
            body = served.get(f"jobs/{served.job_id}/vertices/{vertex}/metrics?get=0.{name},1.{name}").body
            return sum(int(float(entry["value"])) for entry in body)

        def counted() -> bool:
            return (
                total(scrape(address), "flink_taskmanager_job_task_operator_numRecordsIn", operator_name="sum") == FIRST
            )

        wait_until(counted, timeout=30, what=f"sum at {FIRST} records")
        if remote:
            wait_until(
                lambda: rest(double, "numBytesOut") > 0 and rest(total_sum, "numBytesIn") > 0,
                timeout=30,
                what="bytes counted across processes through REST",
            )
            samples = scrape(address)
            assert total(samples, "flink_taskmanager_job_task_numBytesOut", task_name="double") > 0
            assert total(samples, "flink_taskmanager_job_task_numBytesIn", task_name="sum____discard") > 0
            details = served.get(f"jobs/{served.job_id}").body["vertices"]
            assert all(v["metrics"]["write-bytes"] > 0 for v in details if v["name"] != "sum -> discard")
        else:
            samples = scrape(address)
            assert total(samples, "flink_taskmanager_job_task_numBytesOut") == 0
            assert total(samples, "flink_taskmanager_job_task_numBytesIn") == 0
            assert rest(double, "numBytesOut") == 0 and rest(total_sum, "numBytesIn") == 0
    finally:
        served.stop()
