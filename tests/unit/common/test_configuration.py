"""The key registry: a key fluvial accepts does what it says; every other key is refused, naming the fix."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common.configuration import (
    OPTIONS,
    Configuration,
    check_buffer_timeout,
    check_key,
    unsupported_option,
)
from fluvial.common.errors import ConfigurationError


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (
            "rest.client.max-content-length",
            "fluvial's REST API and dashboard take rest.port, rest.address, "
            "rest.bind-address and rest.allowed-hosts only",
        ),
        (
            "web.submit.enable",
            "fluvial's REST API and dashboard take rest.port, rest.address, "
            "rest.bind-address and rest.allowed-hosts only",
        ),
        ("metrics.reporter.jmx.port", "fluvial's metrics take metrics.reporter.prom.port"),
        ("metrics.reporters", "fluvial's metrics take metrics.reporter.prom.port"),
        (
            "execution.checkpointing.unaligned.max-subtasks-per-channel-state-file",
            "fluvial's unaligned checkpoints take execution.checkpointing.unaligned.enabled",
        ),
        ("state.backend.incremental", "EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=...)"),
        ("state.backend.rocksdb.localdir", "set_db_storage_paths"),
        ("taskmanager.memory.process.size", "does not size TaskManager memory yet"),
        ("python.fn-execution.bundle.size", "no separate Python worker"),
        ("pipeline.jars", "fluvial runs no JVM"),
    ],
)
def test_flink_keys_fluvial_does_not_implement_are_refused_naming_what_to_do(key, says):
    with pytest.raises(ConfigurationError) as refused:
        Configuration().set_string(key, "1")
    assert f"configuration key '{key}' is not supported by fluvial yet: " in str(refused.value)
    assert says in str(refused.value)


def test_unknown_keys_are_refused_with_the_closest_known_one_or_the_list():
    with pytest.raises(ConfigurationError, match="did you mean 'parallelism.default'"):
        check_key("parallelism.defualt")
    with pytest.raises(ConfigurationError, match="known keys: local.number-taskmanager"):
        check_key("local.unknown")
    with pytest.raises(
        ConfigurationError, match="fluvial does not know it, so it would do nothing: remove it. `fluvial config` lists"
    ):
        check_key("execution.some-flink-key-we-never-heard-of")


def test_a_programs_own_keys_outside_the_engine_namespaces_are_kept_for_it():
    configuration = Configuration().set_string("my-app.threshold", "7")
    assert configuration.get_string("my-app.threshold") == "7"


def test_restart_strategy_keys_are_known():
    Configuration().set_string("restart-strategy.type", "fixed-delay").set_string(
        "restart-strategy.fixed-delay.attempts", "3"
    )


@given(st.sampled_from(sorted(OPTIONS)))
def test_every_known_key_is_accepted_and_none_is_also_unsupported(key):
    check_key(key)
    assert unsupported_option(key) is None


def test_unsupported_namespaces_do_not_swallow_known_keys_with_a_similar_prefix():
    check_key("restart-strategy.type")  # "rest." must not match "restart-strategy"
    check_key("state.backend.type")  # "state.backend.incremental" is one key, not a namespace


@pytest.mark.parametrize("raw", ["0", "100", "100 ms", "1 s"])
def test_buffer_timeouts_of_zero_or_more_hold_and_are_accepted(raw):
    assert Configuration().set_string("execution.buffer-timeout", raw).get("execution.buffer-timeout") >= 0


def test_buffer_timeout_minus_one_holds_too_and_below_it_is_refused():
    """-1 promises only that records wait no longer than a full buffer: batches never wait, so it holds."""
    assert check_buffer_timeout(-1) == -1
    configuration = Configuration().set_string("execution.buffer-timeout", "-2")
    with pytest.raises(ConfigurationError, match="buffer timeout -2 is invalid"):
        configuration.validate()
    with pytest.raises(ConfigurationError, match="integer number of milliseconds"):
        check_buffer_timeout(True)


def test_flinks_deprecated_chaining_key_means_the_current_one():
    configuration = Configuration()
    configuration.set_string("pipeline.operator-chaining", "false")
    assert configuration.get("pipeline.operator-chaining.enabled") is False
    assert configuration.get_boolean("pipeline.operator-chaining", True) is False
    assert configuration.contains_key("pipeline.operator-chaining")
