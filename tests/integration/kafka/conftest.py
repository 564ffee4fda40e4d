"""The Kafka integration tests share the session's broker (`kafka_broker` in tests/conftest.py); each test
makes topics of its own."""

from __future__ import annotations

import pytest


@pytest.fixture
def bootstrap(kafka_broker) -> str:
    return kafka_broker.extra["bootstrap"]
