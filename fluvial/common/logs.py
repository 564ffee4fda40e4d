"""Where fluvial's own log records go, as Flink keeps its logs: in log files, not in the program's output.

A PyFlink program often configures Python's logging for itself (PyFlink's examples call
`logging.basicConfig(stream=sys.stdout, level=logging.INFO)`); PyFlink's engine logs to its JVM's log files,
so the program's output holds only what the program prints and logs. fluvial runs in the program's process, so
its records would land in that output. Instead, in a program's process:

- the `fluvial` logger does not propagate to the program's handlers; it logs at INFO and above;
- every record goes to the log file of each job running embedded in the process (`job-<JobID>.log`, in
  `env.log.dir`, else $FLUVIAL_LOG_DIR, else ~/.fluvial/log; rotated at 100 MB, `env.log.max` files kept);
  a session cluster's JobManager writes `jobmanager.log` the same way;
- a record reaches the program's own logging (the root logger's handlers, or Python's last resort: stderr) only
  at WARNING and above — or at the level named by $FLUVIAL_LOG_LEVEL (`INFO`, `DEBUG`: "when asked"; `NOTSET`:
  every record, by plain propagation, as the test suite runs) — and never when it says what the caller is told
  anyway by an exception (`extra=RAISED_TO_CALLER`): an error is said once.

fluvial's own processes (a JobManager, TaskManager processes) keep the usual propagation (`own_process`): their
root handlers are fluvial's, and a TaskManager process sends its records to the process that started it.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import threading
from pathlib import Path
from typing import Any

ENGINE_LOGGER = "fluvial"
LOG_DIR_ENV = "FLUVIAL_LOG_DIR"
LEVEL_ENV = "FLUVIAL_LOG_LEVEL"
MAX_BYTES = 100 * 1024 * 1024  # Flink's log4j rolls its files at 100 MB
_RECORD_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")
FORMAT = "%(asctime)s %(levelname)-7s %(name)s [%(threadName)s] - %(message)s"
JOB_LOGS_KEPT = 50  # embedded jobs' log files kept in the directory; older ones are removed
RAISED_TO_CALLER = {"raised_to_caller": True}
"""`logger.error(..., extra=RAISED_TO_CALLER)`: the record says what the caller gets as an exception; it goes to
the log files only, so the program does not see the same error twice."""

_LOCK = threading.Lock()
_installed = False


class _ToProgramLogging(logging.Handler):
    """Hands fluvial's records at or above its level to the program's own logging: the root logger's handlers,
    or Python's last resort (stderr) when it has none — what propagation would have done."""

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "raised_to_caller", False):
            return
        logging.getLogger().callHandlers(record)


_forwarder = _ToProgramLogging()


def forward_level() -> int:
    """The level from which fluvial's records reach the program's logging: $FLUVIAL_LOG_LEVEL, else WARNING."""
    name = os.environ.get(LEVEL_ENV, "").strip().upper()
    level = logging.getLevelName(name) if name else logging.WARNING
    return level if isinstance(level, int) else logging.WARNING


def install() -> None:
    """In a program's process (called on `import fluvial`): the `fluvial` logger as the module docstring says.
    Idempotent; a level the program set on the `fluvial` logger is kept."""
    global _installed
    with _LOCK:
        if _installed:
            return
        _installed = True
        engine = logging.getLogger(ENGINE_LOGGER)
        if engine.level == logging.NOTSET:
            engine.setLevel(logging.INFO)
        level = forward_level()
        if level == logging.NOTSET:  # asked for every record: plain propagation is exactly that
            return
        engine.propagate = False
        _forwarder.setLevel(level)
        engine.addHandler(_forwarder)


def own_process() -> None:
    """In a process that is fluvial's own (its root handlers are fluvial's): records propagate as usual."""
    global _installed
    with _LOCK:
        engine = logging.getLogger(ENGINE_LOGGER)
        engine.removeHandler(_forwarder)
        engine.propagate = True
        _installed = True


def log_directory(configuration: Any = None) -> Path:
    """`env.log.dir`, else $FLUVIAL_LOG_DIR, else ~/.fluvial/log."""
    configured = configuration.get("env.log.dir") if configuration is not None else None
    return Path(configured or os.environ.get(LOG_DIR_ENV) or Path.home() / ".fluvial" / "log")


def rotating_handler(path: Path, backups: int) -> logging.Handler:
    """A handler writing Flink-formatted records to `path`, rotated at MAX_BYTES with `backups` older files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=MAX_BYTES, backupCount=backups, encoding="utf-8", delay=True
    )
    handler.setFormatter(logging.Formatter(FORMAT))
    return handler


def job_log_file(job_id: Any, configuration: Any = None) -> Path:
    return log_directory(configuration) / f"job-{job_id}.log"


def task_manager_log_marker(index: int) -> str:
    """What begins the message of every record a TaskManager process forwards (the log file it lands in is
    shared with the JobMaster and the other TaskManagers: the dashboard's log page of one keeps its records)."""
    return f"[TaskManager {index}] "


def records_marked(text: str, marker: str) -> str:
    """The records of a log file's `text` (FORMAT: each begins with its asctime; continuation lines, as a
    traceback's, follow) whose message begins with `marker`."""
    kept: list[str] = []
    keep = False
    for line in text.splitlines(keepends=True):
        if _RECORD_START.match(line):
            keep = f" - {marker}" in line
        if keep:
            kept.append(line)
    return "".join(kept)


def job_stdout_file(job_id: Any, configuration: Any = None) -> Path:
    """Where what an embedded job's TaskManager processes print is copied (the dashboard's stdout page)."""
    return log_directory(configuration) / f"job-{job_id}.out"


def open_job_log(job_id: Any, configuration: Any) -> logging.Handler:
    """Start the log file of an embedded job: fluvial's records go there until `close_job_log`."""
    handler = rotating_handler(job_log_file(job_id, configuration), configuration.get("env.log.max"))
    logging.getLogger(ENGINE_LOGGER).addHandler(handler)
    _prune_job_logs(log_directory(configuration))
    return handler


def close_job_log(handler: logging.Handler) -> None:
    logging.getLogger(ENGINE_LOGGER).removeHandler(handler)
    handler.close()


def _prune_job_logs(directory: Path) -> None:
    """Keep the newest JOB_LOGS_KEPT embedded jobs' logs and copies of their output: a program running many jobs
    does not fill the disk."""
    try:
        logs = sorted(directory.glob("job-*.log*"), key=lambda path: path.stat().st_mtime)
        outputs = sorted(directory.glob("job-*.out"), key=lambda path: path.stat().st_mtime)
    except OSError:
        return
    for old in logs[:-JOB_LOGS_KEPT] + outputs[:-JOB_LOGS_KEPT]:
        try:
            old.unlink()
        except OSError:
            pass
