"""docs/differences.md stays true: every module it calls missing is missing, every name it says fluvial adds
is there, and the calls, keys and command-line flags it says are refused are refused. When a missing piece
lands (a connector, the Table API, `-py`), this fails until the page says so."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import typer

from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError, FluvialError
from fluvial.datastream import StreamExecutionEnvironment

PAGE = (Path(__file__).resolve().parents[3] / "docs" / "differences.md").read_text()
DOTTED = re.compile(r"`(fluvial(?:\.\w+)+)")


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", PAGE, re.S | re.M)
    assert match, f"docs/differences.md has no section '{title}'"
    return match[1]


def _resolve(dotted: str) -> object:
    """The object a dotted name names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[end:]:
            obj = getattr(obj, attribute)
        return obj
    raise ModuleNotFoundError(dotted)


MISSING = DOTTED.findall(_section("What is not there"))
ADDED = DOTTED.findall(_section("What fluvial adds"))


def test_the_page_names_what_is_missing_and_what_is_added() -> None:
    assert "fluvial.datastream.connectors.pulsar" in MISSING and len(MISSING) >= 6
    assert len(ADDED) >= 6


@pytest.mark.parametrize("module", MISSING)
def test_what_the_page_calls_missing_is_missing(module: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


@pytest.mark.parametrize("name", ADDED)
def test_what_the_page_says_fluvial_adds_is_there(name: str) -> None:
    assert _resolve(name) is not None


@pytest.mark.parametrize("call", ["add_jars", "add_classpaths", "register_cached_file"])
def test_the_refused_environment_calls_are_refused(call: str) -> None:
    assert f"`env.{call}(" in PAGE
    with pytest.raises(FluvialError):
        getattr(StreamExecutionEnvironment.get_execution_environment(), call)(*["x"] * (2 if "cached" in call else 1))


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("set_latency_tracking_interval", (1000,)),
        ("set_use_snapshot_compression", (True,)),
        ("disable_auto_generated_uids", ()),
    ],
)
def test_the_refused_execution_config_calls_are_refused(name: str, arguments: tuple) -> None:
    assert f"`{name}" in PAGE
    with pytest.raises(FluvialError):
        getattr(StreamExecutionEnvironment.get_execution_environment().get_config(), name)(*arguments)


def test_the_changelog_state_backend_is_there() -> None:
    assert "enable_changelog_state_backend" not in PAGE
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.enable_changelog_state_backend(True) is env and env.is_changelog_state_backend_enabled()


@pytest.mark.parametrize(
    "key",
    [
        "python.fn-execution.bundle.size",
        "taskmanager.memory.process.size",
        "jobmanager.memory.process.size",
        "pipeline.jars",
        "pipeline.classpaths",
        "web.submit.enable",
    ],
)
def test_the_refused_keys_are_refused(key: str) -> None:
    assert f"`{key.split('.')[0]}" in PAGE or f"`{key}`" in PAGE
    with pytest.raises(ConfigurationError):
        Configuration().set_string(key, "1")


def test_python_files_is_accepted() -> None:
    assert "`python.files` (`add_python_file`) works" in PAGE
    Configuration().set_string("python.files", "/tmp")


def test_python_requirements_and_archives_are_accepted() -> None:
    assert "`python.requirements` and `python.archives` work on this machine" in PAGE
    Configuration().set_string("python.requirements", "/tmp/requirements.txt").set_string("python.archives", "/a.zip")


def test_the_flink_run_flags_the_page_calls_missing_are_missing() -> None:
    from fluvial.cli.app import app

    run = typer.main.get_command(app).commands["run"]
    flags = {option for parameter in run.params for option in parameter.opts + parameter.secondary_opts}
    text = _section("What is not there").split("Command line:", 1)[1]
    present, missing_part = text.split("but not its", 1)
    missing = set(re.findall(r"`(-{1,2}[a-zA-Z]+)`", missing_part)) - {"-D"}  # "set the key with -D"
    assert {"--class", "-c", "-rm"} <= missing
    assert not missing & flags, f"fluvial run has {missing & flags} now: update docs/differences.md"
    said_present = set(re.findall(r"`(-{1,2}[a-zA-Z]+)`", present))
    assert said_present <= flags, f"fluvial run lacks {said_present - flags}: update docs/differences.md"
