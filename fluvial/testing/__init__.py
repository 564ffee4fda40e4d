"""fluvial.testing: what our tests use, shipped for yours (as Flink ships its harnesses).

- OperatorHarness: one operator driven by hand — records, watermarks, processing time on a ManualClock,
  snapshot and restore mid-test, output and side outputs captured.
- ScriptedSource with Pause, Crash and End markers: put a job exactly where a test wants it.
- run_job / collect_job / execution_modes: run the same job in every execution mode.
- EventLog: what a job's functions did, seen from the test whichever process they ran in; `first_time`: a
  function that fails once, on the first attempt only.
- ManualClock and ManualScheduledExecutor: time and threads a test controls.
- wait_until: poll for what you wait on, never sleep and hope.
- The fault harness: KeySequenceSource (per-key sequences) and SequenceVerifier (lost, duplicated and
  out-of-order records), the exactly-once FileSink oracle (`verify_sequences`), and a seeded fault driver
  (`run_trial`, FaultKind) that kills the job's process, raises in user code, corrupts checkpoints, fills the
  checkpoint disk and makes its directory unwritable; `bench/soak.py` runs it at scale.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fluvial.common.time import ManualClock
from fluvial.testing.events import EventLog, first_time
from fluvial.testing.execution import ExecutionMode, collect_job, environment, execution_modes, run_job
from fluvial.testing.executors import ManualScheduledExecutor
from fluvial.testing.faults import FaultKind, FaultTrial, FaultUnavailable, TrialResult, TrialSettings, run_trial
from fluvial.testing.harness import ManualProcessingTime, OperatorHarness, OperatorSubtaskSnapshot
from fluvial.testing.oracle import ExactlyOnceReport, verify_sequences
from fluvial.testing.sequences import KeySequenceSource, SequenceVerifier
from fluvial.testing.sources import Crash, End, Pause, ScriptCrash, ScriptedSource

__all__ = [
    "Crash",
    "End",
    "EventLog",
    "ExactlyOnceReport",
    "ExecutionMode",
    "FaultKind",
    "FaultTrial",
    "FaultUnavailable",
    "first_time",
    "KeySequenceSource",
    "ManualClock",
    "ManualProcessingTime",
    "ManualScheduledExecutor",
    "OperatorHarness",
    "OperatorSubtaskSnapshot",
    "Pause",
    "ScriptCrash",
    "ScriptedSource",
    "SequenceVerifier",
    "TrialResult",
    "TrialSettings",
    "collect_job",
    "environment",
    "execution_modes",
    "run_job",
    "run_trial",
    "verify_sequences",
    "wait_until",
]


def wait_until(
    condition: Callable[[], bool], timeout: float = 30.0, what: str = "the condition", interval: float = 0.005
) -> None:
    """Poll `condition` until it holds; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
