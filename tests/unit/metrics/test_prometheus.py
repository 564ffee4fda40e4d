"""Prometheus text with the names and labels Flink's Prometheus reporter gives, so Flink's Grafana dashboards
find the metrics."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from fluvial.metrics import prometheus
from fluvial.metrics.snapshot import JobMetricsSnapshot, TaskMetricsSnapshot, UserMetricSample, vertex_hex_id


def _job() -> JobMetricsSnapshot:
    task = TaskMetricsSnapshot(
        "a" * 32,
        "word count",
        2,
        "Source: numbers -> Map",
        1,
        0,
        "tm-0",
        "host-1",
        0,
        task={"numRecordsOut": 10, "busyTimeMsPerSecond": 250.0},
        operators={"node-1": {"numRecordsOut": 10}, "node-2": {"numRecordsIn": 10, "currentOutputWatermark": 5}},
        operator_names={"node-1": "Source: numbers", "node-2": "Map"},
        user=[UserMetricSample("node-2", "my_key.my_value.hits", "my_key.hits", {"<my_key>": "my_value"}, 3)],
    )
    return JobMetricsSnapshot("a" * 32, "word count", {"numRestarts": 1, "uptime": 1500}, [task])


def _samples() -> dict[str, list]:
    text = prometheus.render([_job()], host="jm-host").decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_job_task_and_operator_metrics_carry_flinks_names_and_labels():
    samples = _samples()
    (restarts,) = samples["flink_jobmanager_job_numRestarts"]
    assert restarts.value == 1 and restarts.labels == {"host": "jm_host", "job_id": "a" * 32, "job_name": "word_count"}
    (busy,) = samples["flink_taskmanager_job_task_busyTimeMsPerSecond"]
    assert busy.value == 250.0
    assert busy.labels["task_name"] == "Source:_numbers____Map", "characters outside [a-zA-Z0-9:_] become _"
    assert busy.labels["task_id"] == vertex_hex_id("a" * 32, 2)
    assert {busy.labels[k] for k in ("tm_id", "subtask_index", "task_attempt_num")} == {"tm_0", "1", "0"}
    assert len(busy.labels["task_attempt_id"]) == 32
    (records_in,) = samples["flink_taskmanager_job_task_operator_numRecordsIn"]
    assert records_in.labels["operator_name"] == "Map" and records_in.labels["operator_id"] == "node_2"
    assert [s.value for s in samples["flink_taskmanager_job_task_operator_numRecordsOut"]] == [10]


def test_user_metrics_are_named_by_their_groups_with_key_value_groups_as_labels():
    (hits,) = _samples()["flink_taskmanager_job_task_operator_my_key_hits"]
    assert hits.value == 3 and hits.labels["my_key"] == "my_value" and hits.labels["operator_name"] == "Map"
