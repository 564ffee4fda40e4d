"""Restart strategies as a job describes them: the RestartStrategies API and its checks, parsing Flink's
`restart-strategy.*` keys, and which strategy a job ends up with (the runtime side: test_restart_backoff.py)."""

from __future__ import annotations

import dataclasses
import math
import pickle
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import cloudpickle
import pytest

from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.restart_strategy import (
    MAX_RESTART_ATTEMPTS,
    RESTART_STRATEGY_KEYS,
    ExponentialDelayRestartStrategyConfiguration,
    FailureRateRestartStrategyConfiguration,
    FallbackRestartStrategyConfiguration,
    FixedDelayRestartStrategyConfiguration,
    NoRestartStrategyConfiguration,
    RestartStrategies,
    RestartStrategyType,
    default_restart_strategy,
    resolve_restart_strategy,
    restart_strategy_from_configuration,
)
from fluvial.common.time import Duration


class DictConfig:
    """Anything with `get_string` will do; this one also records the keys read, and accepts keys (like the
    deprecated `restart-strategy`) that Configuration.set_string may not know yet."""

    def __init__(self, **pairs: str) -> None:
        self.data = dict(pairs)
        self.read: set[str] = set()

    def get_string(self, key: str, default_value: str | None = None) -> str | None:
        self.read.add(key)
        return self.data.get(key, default_value)


def config(pairs: dict[str, str]) -> Configuration:
    conf = Configuration()
    for key, value in pairs.items():
        conf.set_string(key, value)
    return conf


def exponential(
    initial: int = 100,
    maximum: int = 1_000,
    multiplier: float = 2.0,
    threshold: int = 10_000,
    jitter: float = 0.0,
    attempts: int = MAX_RESTART_ATTEMPTS,
):
    return RestartStrategies.exponential_delay_restart(initial, maximum, multiplier, threshold, jitter, attempts)


ALL_CONFIGURATIONS = [
    RestartStrategies.no_restart(),
    RestartStrategies.fall_back_restart(),
    RestartStrategies.fixed_delay_restart(3, 10_000),
    RestartStrategies.failure_rate_restart(2, timedelta(minutes=5), Duration.of_seconds(1)),
    exponential(jitter=0.1, attempts=7),
]


# --- the RestartStrategies API ---------------------------------------------------------------------------


@pytest.mark.parametrize("delay", [10_000, 10_000.0, timedelta(seconds=10), Duration.of_seconds(10)])
def test_fixed_delay_accepts_every_pyflink_interval_form(delay: Any) -> None:
    strategy = RestartStrategies.fixed_delay_restart(3, delay)
    assert isinstance(strategy, FixedDelayRestartStrategyConfiguration)
    assert strategy.get_restart_attempts() == 3
    assert strategy.delay_between_attempts_ms == 10_000
    assert strategy.get_delay_between_attempts_interval() == timedelta(seconds=10)  # PyFlink returns timedelta


def test_failure_rate_getters() -> None:
    strategy = RestartStrategies.failure_rate_restart(4, timedelta(minutes=5), 250)
    assert strategy.get_max_failure_rate() == 4
    assert strategy.get_failure_interval() == timedelta(minutes=5)
    assert strategy.get_delay_between_attempts_interval() == timedelta(milliseconds=250)
    assert (strategy.failure_interval_ms, strategy.delay_between_attempts_ms) == (300_000, 250)


def test_exponential_getters_and_unlimited_attempts_by_default() -> None:
    strategy = RestartStrategies.exponential_delay_restart(
        Duration.of_seconds(1), timedelta(minutes=1), 1.5, 3_600_000, 0.1
    )
    assert strategy.get_initial_backoff() == timedelta(seconds=1)
    assert strategy.get_max_backoff() == timedelta(minutes=1)
    assert strategy.get_backoff_multiplier() == 1.5
    assert strategy.get_reset_backoff_threshold() == timedelta(hours=1)
    assert strategy.get_jitter_factor() == 0.1
    assert strategy.get_attempts_before_reset_backoff() == MAX_RESTART_ATTEMPTS == 2**31 - 1


def test_nested_names_match_pyflink() -> None:
    assert RestartStrategies.NoRestartStrategyConfiguration is NoRestartStrategyConfiguration
    assert RestartStrategies.FixedDelayRestartStrategyConfiguration is FixedDelayRestartStrategyConfiguration
    assert RestartStrategies.FailureRateRestartStrategyConfiguration is FailureRateRestartStrategyConfiguration
    assert RestartStrategies.FallbackRestartStrategyConfiguration is FallbackRestartStrategyConfiguration
    assert (
        RestartStrategies.ExponentialDelayRestartStrategyConfiguration is ExponentialDelayRestartStrategyConfiguration
    )


@pytest.mark.parametrize("dumps, loads", [(pickle.dumps, pickle.loads), (cloudpickle.dumps, pickle.loads)])
@pytest.mark.parametrize("strategy", ALL_CONFIGURATIONS, ids=lambda s: type(s).__name__)
def test_configurations_are_picklable_equal_and_hashable(strategy: Any, dumps: Callable, loads: Callable) -> None:
    copy = loads(dumps(strategy))
    assert copy == strategy and type(copy) is type(strategy)
    assert hash(copy) == hash(strategy)


@pytest.mark.parametrize("strategy", ALL_CONFIGURATIONS[2:], ids=lambda s: type(s).__name__)
def test_configurations_are_frozen(strategy: Any) -> None:
    field = dataclasses.fields(strategy)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(strategy, field, 0)


def test_configurations_with_other_values_differ() -> None:
    assert RestartStrategies.fixed_delay_restart(3, 1_000) != RestartStrategies.fixed_delay_restart(3, 1_001)
    assert RestartStrategies.no_restart() != RestartStrategies.fall_back_restart()


def test_descriptions_name_the_values() -> None:
    assert "3 times" in RestartStrategies.fixed_delay_restart(3, 10_000).get_description()
    assert "10000 ms" in RestartStrategies.fixed_delay_restart(3, 10_000).get_description()
    description = RestartStrategies.failure_rate_restart(2, 60_000, 500).get_description()
    assert "2 failures" in description and "60000 ms" in description and "500 ms" in description
    assert "x2.0" in exponential().get_description()


INVALID = [
    (lambda: RestartStrategies.fixed_delay_restart(-1, 1_000), "restart_attempts", "-1"),
    (lambda: RestartStrategies.fixed_delay_restart(3, -5), "delay_between_attempts", "-5"),
    (lambda: RestartStrategies.fixed_delay_restart(3, timedelta(milliseconds=-2)), "delay_between_attempts", "-2"),
    (lambda: RestartStrategies.fixed_delay_restart(3, math.inf), "delay_between_attempts", "inf"),
    (lambda: RestartStrategies.failure_rate_restart(0, 60_000, 0), "failure_rate", "0"),
    (lambda: RestartStrategies.failure_rate_restart(1, 0, 0), "failure_interval", "0"),
    (lambda: RestartStrategies.failure_rate_restart(1, 60_000, -1), "delay_interval", "-1"),
    (lambda: exponential(multiplier=0.5), "backoff_multiplier", "0.5"),
    (lambda: exponential(multiplier=math.nan), "backoff_multiplier", "nan"),
    (lambda: exponential(multiplier=math.inf), "backoff_multiplier", "inf"),
    (lambda: exponential(jitter=1.5), "jitter_factor", "1.5"),
    (lambda: exponential(jitter=-0.1), "jitter_factor", "-0.1"),
    (lambda: exponential(initial=0), "initial_backoff", "0"),
    (lambda: exponential(initial=500, maximum=499), "max_backoff", "499"),
    (lambda: exponential(threshold=0), "reset_backoff_threshold", "0"),
    (lambda: exponential(attempts=0), "attempts_before_reset_backoff", "0"),
]


@pytest.mark.parametrize("build, parameter, value", INVALID, ids=[f"{p}={v}" for _, p, v in INVALID])
def test_invalid_values_name_the_parameter_the_value_and_the_fix(build: Callable, parameter: str, value: str) -> None:
    with pytest.raises(InvalidJobError) as info:
        build()
    message = str(info.value)
    assert message.startswith(f"{parameter} is {value}")
    assert re.search(r"; (pass|raise) ", message), message  # the fix


@pytest.mark.parametrize(
    "build",
    [
        lambda: RestartStrategies.fixed_delay_restart("3", 1_000),
        lambda: RestartStrategies.fixed_delay_restart(True, 1_000),
        lambda: RestartStrategies.fixed_delay_restart(3.0, 1_000),
        lambda: RestartStrategies.fixed_delay_restart(3, "10 s"),
        lambda: RestartStrategies.failure_rate_restart(1, None, 0),
        lambda: exponential(jitter="0.1"),
    ],
)
def test_wrong_types_are_type_errors_with_an_example(build: Callable) -> None:
    with pytest.raises(TypeError, match="pass e.g."):
        build()


def test_boundary_values_are_accepted() -> None:
    assert RestartStrategies.fixed_delay_restart(0, 0).restart_attempts == 0
    assert RestartStrategies.failure_rate_restart(1, 1, 0).failure_interval_ms == 1
    assert exponential(multiplier=1.0, jitter=0.0).backoff_multiplier == 1.0
    assert exponential(initial=7, maximum=7, jitter=1.0).jitter_factor == 1.0
    assert exponential(attempts=1).attempts_before_reset_backoff == 1


def test_the_error_survives_pickling() -> None:
    with pytest.raises(InvalidJobError) as info:
        RestartStrategies.fixed_delay_restart(-1, 0)
    copy = pickle.loads(pickle.dumps(info.value))
    assert isinstance(copy, InvalidJobError) and str(copy) == str(info.value)


# --- from configuration ---------------------------------------------------------------------------------


def test_no_type_means_fallback() -> None:
    assert restart_strategy_from_configuration(Configuration()) == FallbackRestartStrategyConfiguration()
    # keys of a strategy without a type choose nothing, as in Flink
    conf = config({"restart-strategy.fixed-delay.attempts": "5"})
    assert restart_strategy_from_configuration(conf) == FallbackRestartStrategyConfiguration()


@pytest.mark.parametrize(
    "value, expected",
    [
        ("none", NoRestartStrategyConfiguration),
        ("off", NoRestartStrategyConfiguration),
        ("disable", NoRestartStrategyConfiguration),
        (" NONE ", NoRestartStrategyConfiguration),
        ("fixed-delay", FixedDelayRestartStrategyConfiguration),
        ("fixeddelay", FixedDelayRestartStrategyConfiguration),
        ("Fixed-Delay", FixedDelayRestartStrategyConfiguration),
        ("failure-rate", FailureRateRestartStrategyConfiguration),
        ("failurerate", FailureRateRestartStrategyConfiguration),
        ("exponential-delay", ExponentialDelayRestartStrategyConfiguration),
        ("exponentialdelay", ExponentialDelayRestartStrategyConfiguration),
    ],
)
def test_type_names_and_aliases(value: str, expected: type) -> None:
    assert type(restart_strategy_from_configuration(config({"restart-strategy.type": value}))) is expected


def test_unknown_type_names_the_value_and_every_valid_one() -> None:
    with pytest.raises(ConfigurationError) as info:
        restart_strategy_from_configuration(config({"restart-strategy.type": "fixed-dealy"}))
    message = str(info.value)
    assert "'restart-strategy.type'" in message and "'fixed-dealy'" in message
    for strategy_type in RestartStrategyType:
        for name in strategy_type.value:
            assert name in message


def test_deprecated_key_is_read_when_the_new_one_is_absent() -> None:
    assert (
        restart_strategy_from_configuration(DictConfig(**{"restart-strategy": "none"}))
        == NoRestartStrategyConfiguration()
    )
    both = DictConfig(**{"restart-strategy": "none", "restart-strategy.type": "fixed-delay"})
    assert isinstance(restart_strategy_from_configuration(both), FixedDelayRestartStrategyConfiguration)
    with pytest.raises(ConfigurationError, match="'restart-strategy' has the value 'bogus'"):
        restart_strategy_from_configuration(DictConfig(**{"restart-strategy": "bogus"}))


@pytest.mark.parametrize(
    "value, expected",
    [
        ("10 s", 10_000),
        ("10s", 10_000),
        ("500 ms", 500),
        ("1 min", 60_000),
        ("1m", 60_000),
        ("2 h", 7_200_000),
        ("2 hours", 7_200_000),
        ("1 d", 86_400_000),
        ("3 days", 259_200_000),
        ("250", 250),
        (" 3 s ", 3_000),
        ("1.5 s", 1_500),
        ("10 seconds", 10_000),
        ("5 SEC", 5_000),
        ("2 minutes", 120_000),
        ("7 millis", 7),
        ("1500 µs", 1),
        ("1500 us", 1),
        ("2000000 ns", 2),
        ("0", 0),
        ("0.1 s", 100),
        ("4.35 s", 4_350),
    ],
)
def test_duration_strings(value: str, expected: int) -> None:
    conf = config({"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": value})
    assert restart_strategy_from_configuration(conf).delay_between_attempts_ms == expected


@pytest.mark.parametrize("value", ["ten seconds", "10 parsecs", "-5 s", "", "1..5 s", "s", "10 s 5"])
def test_malformed_durations_name_the_key_and_the_value(value: str) -> None:
    conf = config({"restart-strategy.type": "failure-rate", "restart-strategy.failure-rate.delay": value})
    with pytest.raises(ConfigurationError) as info:
        restart_strategy_from_configuration(conf)
    assert "'restart-strategy.failure-rate.delay'" in str(info.value)
    assert repr(value) in str(info.value) and "'10 s'" in str(info.value)  # an example of the syntax


@pytest.mark.parametrize(
    "key, value",
    [
        ("restart-strategy.fixed-delay.attempts", "three"),
        ("restart-strategy.fixed-delay.attempts", "1.5"),
    ],
)
def test_malformed_integers_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=f"'{key}' has the value '{value}', which is not an integer"):
        restart_strategy_from_configuration(config({"restart-strategy.type": "fixed-delay", key: value}))


def test_malformed_floats_name_the_key() -> None:
    key = "restart-strategy.exponential-delay.jitter-factor"
    with pytest.raises(ConfigurationError, match=f"'{key}' has the value 'lots', which is not a number"):
        restart_strategy_from_configuration(config({"restart-strategy.type": "exponential-delay", key: "lots"}))


@pytest.mark.parametrize(
    "strategy_type, key, value",
    [
        ("fixed-delay", "restart-strategy.fixed-delay.attempts", "-1"),
        ("failure-rate", "restart-strategy.failure-rate.max-failures-per-interval", "0"),
        ("failure-rate", "restart-strategy.failure-rate.failure-rate-interval", "0 ms"),
        ("exponential-delay", "restart-strategy.exponential-delay.backoff-multiplier", "0.5"),
        ("exponential-delay", "restart-strategy.exponential-delay.jitter-factor", "2"),
        ("exponential-delay", "restart-strategy.exponential-delay.max-backoff", "10 ms"),  # below the 1 s default
        ("exponential-delay", "restart-strategy.exponential-delay.initial-backoff", "0 s"),
        ("exponential-delay", "restart-strategy.exponential-delay.reset-backoff-threshold", "0"),
        ("exponential-delay", "restart-strategy.exponential-delay.attempts-before-reset-backoff", "0"),
    ],
)
def test_out_of_range_values_name_the_key_they_came_from(strategy_type: str, key: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        restart_strategy_from_configuration(config({"restart-strategy.type": strategy_type, key: value}))
    assert str(info.value).startswith(f"configuration '{key}' ('{value}') is not valid")


def test_a_default_that_conflicts_with_a_set_value_names_the_default() -> None:
    conf = config(
        {"restart-strategy.type": "exponential-delay", "restart-strategy.exponential-delay.initial-backoff": "2 min"}
    )  # above the 1 min max default
    key = "restart-strategy.exponential-delay.max-backoff"
    with pytest.raises(ConfigurationError, match=rf"'{key}' \(its default 60000\)"):
        restart_strategy_from_configuration(conf)


def test_fixed_delay_keys_and_defaults() -> None:
    assert restart_strategy_from_configuration(
        config(
            {
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "5",
                "restart-strategy.fixed-delay.delay": "10 s",
            }
        )
    ) == RestartStrategies.fixed_delay_restart(5, 10_000)
    assert restart_strategy_from_configuration(
        config({"restart-strategy.type": "fixed-delay"})
    ) == RestartStrategies.fixed_delay_restart(1, 1_000)


def test_failure_rate_keys_and_defaults() -> None:
    assert restart_strategy_from_configuration(
        config(
            {
                "restart-strategy.type": "failure-rate",
                "restart-strategy.failure-rate.max-failures-per-interval": "3",
                "restart-strategy.failure-rate.failure-rate-interval": "5 min",
                "restart-strategy.failure-rate.delay": "500 ms",
            }
        )
    ) == RestartStrategies.failure_rate_restart(3, 300_000, 500)
    assert restart_strategy_from_configuration(
        config({"restart-strategy.type": "failure-rate"})
    ) == RestartStrategies.failure_rate_restart(1, 60_000, 1_000)


def test_exponential_delay_keys_and_defaults() -> None:
    assert restart_strategy_from_configuration(
        config(
            {
                "restart-strategy.type": "exponential-delay",
                "restart-strategy.exponential-delay.initial-backoff": "10 s",
                "restart-strategy.exponential-delay.max-backoff": "2 min",
                "restart-strategy.exponential-delay.backoff-multiplier": "1.4",
                "restart-strategy.exponential-delay.reset-backoff-threshold": "10 min",
                "restart-strategy.exponential-delay.jitter-factor": "0.2",
                "restart-strategy.exponential-delay.attempts-before-reset-backoff": "10",
            }
        )
    ) == RestartStrategies.exponential_delay_restart(10_000, 120_000, 1.4, 600_000, 0.2, 10)
    assert restart_strategy_from_configuration(
        config({"restart-strategy.type": "exponential-delay"})
    ) == RestartStrategies.exponential_delay_restart(1_000, 60_000, 1.5, 3_600_000, 0.1, MAX_RESTART_ATTEMPTS)


def test_keys_of_other_strategies_are_ignored() -> None:
    conf = config({"restart-strategy.type": "fixed-delay", "restart-strategy.failure-rate.delay": "garbage"})
    assert restart_strategy_from_configuration(conf) == RestartStrategies.fixed_delay_restart(1, 1_000)


def test_restart_strategy_keys_lists_exactly_the_keys_read() -> None:
    read: set[str] = set()
    for strategy_type in RestartStrategyType:
        source = DictConfig(**{"restart-strategy.type": strategy_type.main_name})
        restart_strategy_from_configuration(source)
        read |= source.read
    fallback = DictConfig()
    restart_strategy_from_configuration(fallback)
    read |= fallback.read
    assert read == set(RESTART_STRATEGY_KEYS)
    assert len(RESTART_STRATEGY_KEYS) == len(set(RESTART_STRATEGY_KEYS)) == 13


# --- which strategy a job runs with ----------------------------------------------------------------------


def test_default_strategy_depends_on_checkpointing() -> None:
    assert default_restart_strategy(True) == RestartStrategies.fixed_delay_restart(2**31 - 1, 1_000)
    assert default_restart_strategy(False) == RestartStrategies.no_restart()


def test_resolution_order_job_then_configuration_then_default() -> None:
    job = RestartStrategies.fixed_delay_restart(2, 5)
    configured = config({"restart-strategy.type": "none"})
    assert resolve_restart_strategy(job, configured, True) is job
    assert (
        resolve_restart_strategy(RestartStrategies.fall_back_restart(), configured, True)
        == RestartStrategies.no_restart()
    )
    assert resolve_restart_strategy(None, configured, True) == RestartStrategies.no_restart()
    assert resolve_restart_strategy(None, Configuration(), True) == default_restart_strategy(True)
    assert (
        resolve_restart_strategy(RestartStrategies.fall_back_restart(), None, False) == RestartStrategies.no_restart()
    )
