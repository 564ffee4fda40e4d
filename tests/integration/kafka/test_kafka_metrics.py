"""The Kafka source's metrics per partition (Flink's KafkaSourceReader names: currentOffset, committedOffset,
records-lag) on the job's `/metrics` and in its REST API."""

from __future__ import annotations

import urllib.request

import pytest

from fluvial.common import Configuration, WatermarkStrategy
from fluvial.common.serialization import SimpleStringSchema
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.kafka import KafkaSource
from fluvial.testing import wait_until
from fluvial.testing.kafka import create_topic, produce
from tests.integration.rest_client import http


@pytest.mark.timeout(60)
def test_current_and_committed_offsets_and_lag_per_partition(bootstrap):
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, [f"r{i}" for i in range(40)], partitions=2)
    configuration = Configuration().set_string("rest.port", "0").set_string("local.taskmanager.mode", "thread")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(200)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_group_id(f"g-{topic}")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").filter(lambda v: False).print()
    client = env.execute_async("kafka metrics")
    try:

        def figures() -> dict[str, float]:
            with urllib.request.urlopen(f"{client.web.address}/metrics", timeout=10) as response:  # noqa: S310
                text = response.read().decode()
            found = {}
            for line in text.splitlines():
                if "KafkaSourceReader" in line and not line.startswith("#"):
                    name, value = line.rsplit(" ", 1)
                    metric = name.split("{")[0].rsplit("_", 1)[-1]
                    partition = name.split('partition="')[1].split('"')[0]
                    found[f"{metric}/{partition}"] = float(value)
            return found

        wait_until(
            lambda: figures().get("committedOffset/0") == 20 and figures().get("committedOffset/1") == 20,
            timeout=30,
            what="offsets 20 committed for both partitions",
        )
        seen = figures()
        assert seen["currentOffset/0"] == seen["currentOffset/1"] == 19  # the last offset emitted
        assert seen["lag/0"] == seen["lag/1"] == 0
        base = f"{client.web.address}/jobs/{client.get_job_id()}"
        vertex = http("GET", base, client.web.token).body["vertices"][0]["id"]
        listed = {m["id"] for m in http("GET", f"{base}/vertices/{vertex}/metrics", client.web.token).body}
        for partition in (0, 1):
            for name in ("currentOffset", "committedOffset", "records-lag"):  # in the REST API too
                assert f"0.Source: kafka.KafkaSourceReader.topic.{topic}.partition.{partition}.{name}" in listed
    finally:
        client.cancel()
        client.get_job_execution_result().exception(timeout=30)  # ended: its consumer is closed
