"""SIGKILL of TaskManager processes of a Kafka-to-Kafka job, at random moments and the instant a checkpoint
completes (between "checkpoint complete" and "transaction committed"): a read_committed consumer finds every
record exactly once with EXACTLY_ONCE, at least once with AT_LEAST_ONCE. A few trials here; the soak with many
is `python -m bench.kafka_faults`."""

from __future__ import annotations

import pytest

from fluvial.testing.kafka_faults import run_kafka_trial


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("seed", "guarantee", "kills"), [(7, "EXACTLY_ONCE", 2), (8, "AT_LEAST_ONCE", 1)])
def test_taskmanager_kills_keep_the_delivery_guarantee(kafka_broker, tmp_path, seed, guarantee, kills):
    result = run_kafka_trial(kafka_broker.extra["bootstrap"], tmp_path / "trial", seed, guarantee, kills=kills)
    assert result.kills >= 1, f"no TaskManager was killed; the job's log ends:\n{result.log}"
    assert result.passed, f"{result.outcome}: {result.report}; the job's log ends:\n{result.log}"
