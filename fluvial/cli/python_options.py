"""`flink run`'s Python options, as a PyFlink user types them: `-py FILE` / `--python FILE` (the job file),
`-pym MODULE` / `--pyModule MODULE` (a module as the entry point), `-pyfs` / `--pyFiles`, `-pyreq` /
`--pyRequirements`, `-pyarch` / `--pyArchives` and `-pyexec` / `--pyExecutable` (PyFlink's `python.files`,
`python.requirements`, `python.archives` and `python.executable`).

Flink's parser reads its own options until the first argument it does not know; what follows, options
included, is the program's. So `fluvial run -p 2 -py job.py --input in.txt -p 4` runs job.py at parallelism 2
with the arguments `--input in.txt -p 4`, as `flink run` does. Click stops at the first positional argument
but refuses an unknown option, so `RunCommand` rewrites the arguments first: `-py FILE REST...` becomes
`-- FILE REST...` (FILE is then the JOB argument) and `-pym MODULE REST...` becomes `-pym MODULE -- REST...`.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from fluvial.cli.console import fail_usage

PYTHON_FILE_OPTIONS = ("-py", "--python")
PYTHON_MODULE_OPTIONS = ("-pym", "--pyModule")

PythonFileOption = Annotated[
    str | None,
    typer.Option(
        "-py",
        "--python",
        metavar="FILE",
        help="The job file (Flink's -py): the same as giving it as JOB; what follows it is the job's.",
    ),
]
PythonModuleOption = Annotated[
    str | None,
    typer.Option(
        "-pym",
        "--pyModule",
        metavar="MODULE",
        help="Run this module as the job (Flink's -pym), found on -pyfs or the interpreter's path; what "
        "follows it is the job's.",
    ),
]
PythonFilesOption = Annotated[
    str | None,
    typer.Option(
        "-pyfs",
        "--pyFiles",
        metavar="PATHS",
        help="Comma-separated .py files, directories, .zip/.whl/.egg archives on the job's path (python.files).",
    ),
]
PythonRequirementsOption = Annotated[
    str | None,
    typer.Option(
        "-pyreq",
        "--pyRequirements",
        metavar="FILE[#CACHE_DIR]",
        help="A requirements file the job's TaskManagers install (python.requirements).",
    ),
]
PythonArchivesOption = Annotated[
    str | None,
    typer.Option(
        "-pyarch",
        "--pyArchives",
        metavar="ARCHIVE[#DIR],...",
        help="Archives extracted for the job's TaskManagers (python.archives).",
    ),
]
PythonExecutableOption = Annotated[
    str | None,
    typer.Option(
        "-pyexec",
        "--pyExecutable",
        metavar="PYTHON",
        help="The interpreter of the job's TaskManagers (python.executable).",
    ),
]


class RunCommand(TyperCommand):
    """`fluvial run`: the Typer command, with Flink's -py/-pym handling of the arguments that follow them."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, flink_python_arguments(args, self.get_params(ctx)))


def flink_python_arguments(args: list[str], params: list[Any]) -> list[str]:
    """`args` rewritten so that everything after `-py FILE` or `-pym MODULE` — and after the first unknown option
    following them — reaches the job; unchanged when neither option is there."""
    takes_value = _option_arities(params)
    head: list[str] = []
    script: str | None = None
    module: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        name, has_inline_value, inline_value = token.partition("=")
        if token == "--" or not token.startswith("-") or token == "-" or name not in takes_value:
            break
        if not has_inline_value and takes_value[name] and index + 1 >= len(args):
            return args  # `-py` without its value: click says so
        value = inline_value if has_inline_value else args[index + 1] if takes_value[name] else None
        step = 1 if has_inline_value or not takes_value[name] else 2
        if name in PYTHON_FILE_OPTIONS:
            script = value
        elif name in PYTHON_MODULE_OPTIONS:
            module = [PYTHON_MODULE_OPTIONS[0], value or ""]
        else:
            head.extend(args[index : index + step])
        index += step
    if script is None and not module:
        return args
    if script is not None and module:
        fail_usage("-py runs a file and -pym a module: give one of them")
    rest = args[index:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return [*head, *module, "--", *([script] if script is not None else []), *rest]


def _option_arities(params: list[Any]) -> dict[str, bool]:
    """Each option name of the command, and whether it takes a value (Typer's click parameters)."""
    arities: dict[str, bool] = {}
    for param in params:
        if param.param_type_name == "option":
            for name in (*param.opts, *param.secondary_opts):
                arities[name] = not param.is_flag and not param.count
    return arities


def python_file_paths(value: str | None) -> list[str]:
    """-pyfs's comma-separated paths, absolute; a missing one is a usage error naming it."""
    paths = [part.strip() for part in (value or "").split(",") if part.strip()]
    for path in paths:
        if not os.path.exists(path):
            fail_usage(
                f"-pyfs: '{path}' does not exist; give existing files, directories or archives, separated by commas"
            )
    return [os.path.abspath(path) for path in paths]
