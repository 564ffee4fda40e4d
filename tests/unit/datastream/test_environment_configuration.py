"""How configuration reaches an environment: the launcher's context configuration first, then the job's own
Configuration, then `configure()` and the setters — each later one wins, and every key applies."""

from __future__ import annotations

import pytest

from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_config import CheckpointingMode
from fluvial.datastream.stream_execution_environment import context_configuration


@pytest.fixture
def launched():
    """Set a context configuration, as `fluvial run -p/-D` does, for the test's duration."""
    tokens = []

    def launch(configuration: Configuration) -> None:
        tokens.append(context_configuration.set(configuration))

    yield launch
    for token in reversed(tokens):
        context_configuration.reset(token)


def test_the_context_configuration_is_every_environments_starting_point(launched):
    launched(Configuration().set_string("parallelism.default", "3").set_string("pipeline.name", "from launcher"))
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_parallelism() == 3
    assert env.get_configuration().get_string("pipeline.name") == "from launcher"
    assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == 3


def test_the_jobs_own_configuration_and_setters_override_the_launchers(launched):
    launched(Configuration().set_string("parallelism.default", "3").set_string("pipeline.max-parallelism", "16"))
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("pipeline.max-parallelism", "64")
    )
    assert (env.get_parallelism(), env.get_max_parallelism()) == (3, 64)
    env.set_parallelism(5)
    assert env.get_parallelism() == 5


def test_without_a_launcher_nothing_changes():
    assert context_configuration.get() is None
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_config().get_parallelism() is None
    assert env.is_chaining_enabled()


def test_configure_applies_job_wide_keys_at_once():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.configure(
        Configuration()
        .set_string("parallelism.default", "4")
        .set_string("pipeline.max-parallelism", "32")
        .set_string("pipeline.auto-watermark-interval", "50 ms")
        .set_string("pipeline.operator-chaining.enabled", "false")
    )
    assert (env.get_parallelism(), env.get_max_parallelism()) == (4, 32)
    assert env.get_config().get_auto_watermark_interval() == 50
    assert not env.is_chaining_enabled()


def test_configure_reaches_a_checkpoint_config_that_already_exists():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(1000)
    env.configure(
        Configuration()
        .set_string("execution.checkpointing.interval", "2 s")
        .set_string("execution.checkpointing.mode", "at_least_once")
        .set_string("state.checkpoints.num-retained", "3")
    )
    config = env.get_checkpoint_config()
    assert config.get_checkpoint_interval() == 2000
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.get_num_retained() == 3


def test_configure_keeps_what_the_configuration_does_not_set():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(1000)
    env.configure(Configuration().set_string("pipeline.name", "named"))
    assert env.get_parallelism() == 2
    assert env.get_checkpoint_interval() == 1000


def test_a_bad_value_fails_when_the_environment_is_made():
    with pytest.raises(ConfigurationError, match="'parallelism.default' has the value 'many'"):
        StreamExecutionEnvironment.get_execution_environment(Configuration().set_string("parallelism.default", "many"))


@pytest.mark.parametrize("target", ["env", "stream"])
def test_buffer_timeouts_from_minus_one_up_hold_and_below_are_refused(target):
    env = StreamExecutionEnvironment.get_execution_environment()
    owner = env if target == "env" else env.from_collection([1])
    assert owner.set_buffer_timeout(100) is owner
    assert owner.set_buffer_timeout(-1) is owner  # batches never wait: every bound holds
    with pytest.raises(ConfigurationError, match="buffer timeout -2 is invalid"):
        owner.set_buffer_timeout(-2)
