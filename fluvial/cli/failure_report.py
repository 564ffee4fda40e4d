"""How a failure reads on the console: the clear message, then the user's own frames.

A job's error surfaces through the runtime (mailbox, chain, operator) and a job file's error through the
launcher (this CLI, runpy) and often the API that refused a call, or an installed library it called (cloudpickle,
a client); none of those frames is what the user wrote, and they hide the one line that matters. So a report
keeps only the frames outside fluvial, the launcher and installed packages (site-packages) — in every exception
of the chain — and says how many it hid. If no frame is left, the exception's own line is
the report. `--verbose` prints the complete traceback instead.
"""

from __future__ import annotations

import os
import runpy
import traceback

import fluvial
from fluvial.common.errors import JobExecutionException

_ENGINE_DIR = os.path.dirname(os.path.abspath(fluvial.__file__)) + os.sep
_LAUNCHER_FILES = frozenset({os.path.abspath(runpy.__file__), "<frozen runpy>"})
_VERBOSE_HINT = "({hidden} frames of fluvial, its launcher and installed libraries hidden; --verbose shows them)"
_LIBRARY_DIRS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


def format_job_failure(failure: JobExecutionException, verbose: bool) -> str:
    """`error: <the job's message>` and, under `Caused by:`, the traceback of the user's exception."""
    if verbose:
        return "".join(traceback.format_exception(failure)).rstrip()
    lines = [f"error: {failure}"]
    if failure.__cause__ is not None:
        lines.append("\nCaused by:\n" + user_traceback(failure.__cause__))
    return "\n".join(lines)


def format_script_error(error: BaseException, verbose: bool) -> str:
    """The traceback of an exception the job file raised (not through a job), from the job file down."""
    if verbose:
        return "".join(traceback.format_exception(error)).rstrip()
    return user_traceback(error)


def user_traceback(error: BaseException) -> str:
    """`error`'s traceback without fluvial's and the launcher's frames, in it and in its causes and contexts."""
    remote = getattr(error.__cause__, "text", None)  # raised in a TaskManager process: its traceback came as text
    if isinstance(remote, str):
        text, hidden = _drop_internal_frames_of_text(remote)
        return text + "\n" + _VERBOSE_HINT.format(hidden=hidden) if hidden else text
    report = traceback.TracebackException.from_exception(error)
    hidden = sum(_drop_internal_frames(exception) for exception in _chain(report))
    text = "".join(report.format()).rstrip()
    return text + "\n" + _VERBOSE_HINT.format(hidden=hidden) if hidden else text


def is_internal_frame(filename: str) -> bool:
    """A frame of fluvial's own code, of the machinery that launched the job file, or of an installed library."""
    if filename in _LAUNCHER_FILES:
        return True
    path = os.path.abspath(filename)
    return path.startswith(_ENGINE_DIR) or any(directory in path for directory in _LIBRARY_DIRS)


def _drop_internal_frames(report: traceback.TracebackException) -> int:
    kept = [frame for frame in report.stack if not is_internal_frame(frame.filename)]
    hidden = len(report.stack) - len(kept)
    if hidden:
        report.stack = traceback.StackSummary.from_list(kept)
    return hidden


def _drop_internal_frames_of_text(text: str) -> tuple[str, int]:
    """A formatted traceback without its internal frames (a frame: the `  File "..."` line and the indented lines
    under it), and how many it dropped."""
    kept: list[str] = []
    hidden = 0
    skipping = False
    for line in text.splitlines():
        if line.startswith('  File "'):
            skipping = is_internal_frame(line[len('  File "') :].split('"', 1)[0])
            hidden += skipping
        elif not line.startswith("    "):
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept).rstrip(), hidden


def _chain(report: traceback.TracebackException) -> list[traceback.TracebackException]:
    """`report` and every exception it was caused by or raised while handling, each once."""
    seen: list[traceback.TracebackException] = []
    pending = [report]
    while pending:
        current = pending.pop()
        if any(current is other for other in seen):
            continue
        seen.append(current)
        pending.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return seen
