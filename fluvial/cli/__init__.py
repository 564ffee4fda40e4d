"""The `fluvial` command line: `fluvial run JOB.py` runs a job file (embedded, or with `-m HOST:PORT` on a session
cluster), `fluvial plan JOB.py` shows the JobGraph it would run; `fluvial cluster start | stop` starts and stops
a session cluster, `fluvial list | cancel | savepoint | stop` manage its jobs (Flink's CLI). `python -m fluvial`
is the same command. `python -m fluvial.cli.jobmanager` is a session cluster's JobManager process, the
composition root that puts the web layer (`fluvial.web.session`) on the cluster.

Exit codes (console.ExitCode): 0 success; 1 the job or the job file failed; 2 usage errors — bad options, a
missing job file, or a file that defined no job; 130 Ctrl-C; 141 the reader of the output went away.
"""

from fluvial.cli.app import app, main

__all__ = ["app", "main"]
