"""`fluvial config [PREFIX]`: the configuration keys fluvial knows, with their defaults and what each does — where
an error about an unknown key points the user."""

from __future__ import annotations

from typing import Annotated

import typer

from fluvial.common.configuration import OPTIONS


def config(
    prefix: Annotated[str, typer.Argument(help="Only the keys starting with this, e.g. execution. or state.")] = "",
) -> None:
    """List the configuration keys fluvial knows (for -D KEY=VALUE, Configuration, get_configuration())."""
    keys = sorted(key for key in OPTIONS if key.startswith(prefix))
    if not keys:
        typer.echo(f"error: no configuration key starts with '{prefix}'; `fluvial config` lists them all", err=True)
        raise typer.Exit(2)
    width = max(len(key) for key in keys)
    for key in keys:
        option = OPTIONS[key]
        default = "" if option.default is None else f" (default: {option.default})"
        typer.echo(f"{key.ljust(width)}  {option.description}{default}")
