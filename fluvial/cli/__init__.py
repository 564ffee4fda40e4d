"""The `fluvial` command line: `fluvial run JOB.py` runs a job file, `fluvial plan JOB.py` shows the JobGraph it
would run. `python -m fluvial` is the same command.

Exit codes (console.ExitCode): 0 success; 1 the job or the job file failed; 2 usage errors — bad options, a
missing job file, or a file that defined no job; 130 Ctrl-C; 141 the reader of the output went away.
"""

from fluvial.cli.app import app, main

__all__ = ["app", "main"]
