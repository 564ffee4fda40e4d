"""Flink's `run` options (`-p`, `-D`, `-s`, `-n`) and the Configuration they give the job's environments.

`fluvial run -p 4 -D key=value -s PATH job.py` builds one Configuration from its options and sets it as the
context configuration (fluvial.datastream.stream_execution_environment.context_configuration) while the job
file runs: every environment the file creates starts from it, and the file's own configuration and setters
override it, as with Flink's CLI. Keys are checked before the job file runs, and a bad one is a usage error
that names the option it came from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

import typer

from fluvial.cli.console import fail_usage
from fluvial.common.configuration import OPTIONS, Configuration
from fluvial.common.errors import ConfigurationError

PARALLELISM_KEY = "parallelism.default"
SAVEPOINT_PATH_KEY = "execution.savepoint.path"
ALLOW_NON_RESTORED_KEY = "execution.savepoint.ignore-unclaimed-state"
TARGET_KEY = "execution.target"
ATTACHED_KEY = "execution.attached"

ParallelismOption = Annotated[
    int | None,
    typer.Option(
        "-p",
        "--parallelism",
        min=1,
        show_envvar=False,
        help="Default parallelism of the job's operators (parallelism.default).",
    ),
]
PropertyOption = Annotated[
    list[str] | None,
    typer.Option("-D", metavar="KEY=VALUE", help="Set a configuration key, e.g. -D pipeline.name=etl. Repeatable."),
]
SavepointOption = Annotated[
    str | None,
    typer.Option("-s", "--fromSavepoint", metavar="PATH", help="Restore the job from this savepoint or checkpoint."),
]
TargetOption = Annotated[
    str | None,
    typer.Option(
        "-t",
        "--target",
        metavar="TARGET",
        help="Where the job runs (execution.target): local (this machine) or ray (a Ray cluster).",
    ),
]
DetachedOption = Annotated[
    bool,
    typer.Option(
        "-d",
        "--detached",
        help="Submit each job and leave it running (execution.attached: false): with -m, or --target ray.",
    ),
]
AllowNonRestoredOption = Annotated[
    bool,
    typer.Option(
        "-n",
        "--allowNonRestoredState",
        help="Restore even when the savepoint holds state of an operator the job no longer has.",
    ),
]


class LaunchOptionError(ValueError):
    """A `run`/`plan` option that cannot become configuration; the message names the option and the fix."""


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    parallelism: int | None = None
    properties: tuple[str, ...] = ()
    savepoint_path: str | None = None
    allow_non_restored_state: bool = False
    target: str | None = None
    detached: bool = False
    python_settings: tuple[tuple[str, str, str], ...] = ()  # (key, value, the option that gave it): -pyfs, -pyreq...

    def to_configuration(self) -> Configuration:
        """The options as configuration: `-D` pairs in order, then `-p`, the `-py...` options, `-t`, `-d`, `-s` and `-n`, so a flag wins
        over a `-D` of the same key (as in Flink). Raises LaunchOptionError."""
        configuration = Configuration()
        for pair in self.properties:
            key, value = _split_property(pair)
            _set(configuration, key, value, f"-D {pair}")
        if self.parallelism is not None:
            _set(configuration, PARALLELISM_KEY, str(self.parallelism), f"-p {self.parallelism}")
        for key, value, option in self.python_settings:
            _set(configuration, key, value, option)
        if self.target is not None:
            _set(configuration, TARGET_KEY, self.target, f"--target {self.target}")
        if self.detached:
            _set(configuration, ATTACHED_KEY, "false", "--detached")
        if self.savepoint_path is not None:
            if not self.savepoint_path.strip():
                raise LaunchOptionError("-s needs the path of a savepoint or checkpoint directory")
            _set(configuration, SAVEPOINT_PATH_KEY, self.savepoint_path, f"-s {self.savepoint_path}")
        if self.allow_non_restored_state:
            if not configuration.get_string(SAVEPOINT_PATH_KEY):
                raise LaunchOptionError(
                    "--allowNonRestoredState only applies when restoring: add -s SAVEPOINT, or leave it out"
                )
            _set(configuration, ALLOW_NON_RESTORED_KEY, "true", "--allowNonRestoredState")
        return configuration


def _split_property(pair: str) -> tuple[str, str]:
    key, separator, value = pair.partition("=")
    if not separator or not key.strip():
        raise LaunchOptionError(f"-D expects KEY=VALUE, e.g. -D parallelism.default=4; got '{pair}'")
    return key.strip(), value.strip()


def _set(configuration: Configuration, key: str, value: str, option: str) -> None:
    """Set and parse the key now, so a bad key or value fails before the job file runs, naming `option`. A key
    outside the engine's namespaces is the program's own (`-D my-app.threshold=5`), kept for it to read."""
    try:
        configuration.set_string(key, value)
        if key in OPTIONS:
            configuration.get(key)
    except ConfigurationError as problem:
        raise LaunchOptionError(f"{option}: {problem}") from None


def launch_configuration(options: LaunchOptions) -> Configuration:
    """The options' configuration; a bad option is a usage error (exit 2) naming it."""
    try:
        return options.to_configuration()
    except LaunchOptionError as problem:
        fail_usage(str(problem))


@contextlib.contextmanager
def launched_with(configuration: Configuration) -> Iterator[None]:
    """Every environment created inside the block starts from `configuration`."""
    from fluvial.datastream.stream_execution_environment import context_configuration

    token = context_configuration.set(configuration)
    try:
        yield
    finally:
        context_configuration.reset(token)
