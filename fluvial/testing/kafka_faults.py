"""Kafka fault trials: a job reading `key:seq` records from Kafka and writing them to Kafka (EXACTLY_ONCE or
AT_LEAST_ONCE) runs in a process of its own with TaskManager processes; the driver SIGKILLs TaskManagers at
random moments — half of them the instant a checkpoint completes, inside the window between "checkpoint
complete" and "transaction committed" — and, once the bounded job has ended, reads the output with a
read_committed consumer: every record exactly once (EXACTLY_ONCE), or at least once (AT_LEAST_ONCE), each
key's records in order among those committed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from fluvial.common.processes import children
from fluvial.testing.faults import completed_checkpoints
from fluvial.testing.kafka import SequenceReport, check_sequences, create_topic, produce, read_committed


@dataclass
class KafkaTrialResult:
    seed: int
    guarantee: str
    kills: int = 0
    kills_at_checkpoint: int = 0
    report: SequenceReport | None = None
    outcome: str = "ok"
    log: str = ""
    details: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        if self.outcome != "ok" or self.report is None:
            return False
        if self.guarantee == "EXACTLY_ONCE":
            return self.report.exactly_once
        return self.report.at_least_once


def run_kafka_trial(
    bootstrap: str,
    workdir: Path,
    seed: int,
    guarantee: str = "EXACTLY_ONCE",
    kills: int = 2,
    keys: int = 16,
    per_key: int = 250,
    rate: int = 1500,
    timeout_s: float = 120.0,
) -> KafkaTrialResult:
    rng = random.Random(seed)
    result = KafkaTrialResult(seed, guarantee)
    source = create_topic(bootstrap, 4)
    sink = create_topic(bootstrap, 3)
    records = [f"{k}:{s}" for s in range(per_key) for k in range(keys)]
    produce(bootstrap, source, records, keys=[r.partition(":")[0] for r in records])
    workdir.mkdir(parents=True, exist_ok=True)
    checkpoints = workdir / "checkpoints"
    log_path = workdir / "job.log"
    argv = [
        sys.executable,
        "-m",
        "fluvial.testing.kafka_fault_job",
        "--bootstrap",
        bootstrap,
        "--input",
        source,
        "--output",
        sink,
        "--guarantee",
        guarantee,
        "--prefix",
        f"trial-{uuid.uuid4().hex[:8]}",
        "--checkpoints",
        str(checkpoints),
        "--rate",
        str(rate),
    ]
    with open(log_path, "wb") as log:
        job = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    try:
        for _ in range(kills):
            seen = set(completed_checkpoints(checkpoints))
            at_checkpoint = rng.random() < 0.5
            target = None
            while time.monotonic() < deadline and job.poll() is None:
                now = set(completed_checkpoints(checkpoints))
                if now - seen:
                    if at_checkpoint:
                        target = now
                        break
                    time.sleep(rng.uniform(0.0, 0.4))
                    target = now
                    break
                time.sleep(0.002 if at_checkpoint else 0.02)
            if target is None or job.poll() is not None:
                break
            pids = [pid for zygote in children(job.pid) for pid in children(zygote)]
            if not pids:
                continue
            os.kill(rng.choice(pids), signal.SIGKILL)
            result.kills += 1
            result.kills_at_checkpoint += at_checkpoint
        job.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        result.outcome = f"the job did not end within {timeout_s:g} s"
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    result.log = log_path.read_text(errors="replace")[-3000:]
    if result.outcome == "ok" and job.returncode != 0:
        result.outcome = f"the job failed (exit {job.returncode})"
    if result.outcome == "ok":
        result.report = check_sequences(read_committed(bootstrap, sink, len(records), idle=0.5), keys, per_key)
    if result.passed:
        shutil.rmtree(workdir, ignore_errors=True)
    return result
