"""A seeded fault driver: runs the fault job (`fluvial.testing.fault_job`) in a process of its own and injects
faults into it while it runs, then judges its committed output with the exactly-once oracle.

One trial, numbered:
1. The job starts on a fresh directory (its checkpoints on a small tmpfs when the plan fills the disk).
2. For each fault of the seeded plan: wait until a checkpoint completed since the last fault (so every fault
   hits a job that made progress), wait a random moment more, inject it, and time the recovery — from the
   fault to the first checkpoint completed after it (a new attempt, or a new process, resumed work).
3. The trial tells the job its plan is done (the file `plan-done`: until it exists, the job's source waits at
   its end, so a loaded machine never lets the job finish before every planned fault was injected, and no fault
   ever lands on a job that already FINISHED, whose checkpoints are gone: an operator never restarts one).
   The job runs to its end; the committed output must hold every record exactly once (lost, duplicated and
   out-of-order all 0). A corrupted checkpoint is the exception: the job must fail at once, naming the damaged
   file, and what it committed before must be free of duplicates.
4. Nothing may be left behind: no process started by any run of the job still running a few seconds after the
   last run ended (each run carries TRIAL_VARIABLE in its environment, which its TaskManagers and launcher
   inherit), nothing in the job's temporary directory (RocksDB working directories), and no hidden part file in
   the output of a job that finished. What was left is reported (`left_running`, `left_on_disk`), and then
   killed or removed so that trials do not pile up.

The faults (FaultKind):
- KILL: SIGKILL of the job's process — JobMaster and TaskManagers at once in thread mode; the trial starts the
  job again from its latest completed checkpoint, as an operator would.
- RAISE: a user function raises (the job's FaultInjector claims a trigger file): a failover.
- CORRUPT: the job is killed, a state file of its latest completed checkpoint damaged, and the job started
  from that checkpoint.
- FILL_DISK: the checkpoint directory (a tmpfs of `disk_bytes`) is filled for a moment: checkpoints fail with
  ENOSPC until the filler is removed. Mounting a tmpfs needs privileges (root, or CAP_SYS_ADMIN); where that
  fails the fault is FaultUnavailable, never faked.
- UNWRITABLE: the job's checkpoint directory is made read-only for a moment (a read-only bind mount for root,
  whom file modes do not stop; `chmod 0500` for anyone else).
- KILL_TASKMANAGER: SIGKILL of one TaskManager process of a job in process mode (`TrialSettings.mode`): the job
  fails over from its latest checkpoint on a replacement process. The driver asks the job's
  TaskManagerProcesses for their pids (default: the job process's zygote's children). Thread mode has none
  (FaultUnavailable).
"""

from __future__ import annotations

import enum
import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fluvial.common.processes import children, kill, pid_running, processes_with, python_command
from fluvial.testing.oracle import ExactlyOnceReport, verify_sequences

TRIAL_VARIABLE = "FLUVIAL_FAULT_TRIAL"  # marks every process of a trial's job runs (step 4)
LEFTOVER_GRACE_S = 5.0  # how long processes of an ended run may take to exit


class FaultKind(enum.Enum):
    """The faults a fault trial injects: a process kill, an exception in user code, a corrupted checkpoint,
    a full or unwritable checkpoint disk, a TaskManager process kill.
    """

    KILL = "kill the job's process"
    RAISE = "raise in user code"
    CORRUPT = "corrupt the latest checkpoint"
    FILL_DISK = "fill the checkpoint disk"
    UNWRITABLE = "make the checkpoint directory unwritable"
    KILL_TASKMANAGER = "kill a TaskManager process"


class FaultUnavailable(RuntimeError):
    """A fault this machine or this execution mode cannot inject; the message says what is missing."""


class TaskManagerProcesses(Protocol):
    """The seam for KILL_TASKMANAGER: the pids of a job's TaskManager processes (process mode)."""

    def pids(self) -> list[int]: ...


class ForkedTaskManagers:
    """The TaskManager processes of a job process in process mode: the children of its zygote, the one child the
    job process starts (`fluvial.cluster.process.launcher`), read from /proc."""

    def __init__(self, job_pid: Callable[[], int]) -> None:
        self._job_pid = job_pid

    def pids(self) -> list[int]:
        return [pid for zygote in children(self._job_pid()) for pid in children(zygote)]


@dataclass(frozen=True)
class TrialSettings:
    """The job of a fault trial: keys, records per key, rate, parallelism, state backend, TaskManager mode,
    checkpoint interval, disk size and timeout.
    """

    keys: int = 20
    per_key: int = 1000
    rate: int = 4000  # records per second per source subtask
    parallelism: int = 2
    backend: str = "hashmap"
    mode: str = "thread"  # local.taskmanager.mode of the job: "thread" or "process"
    interval_ms: int = 100
    disk_bytes: int = 8 * 1024 * 1024
    timeout_s: float = 120.0
    unaligned: bool = False  # unaligned checkpoints (execution.checkpointing.unaligned.enabled)
    pace_us: int = 0  # microseconds the verifying task spends per record: > 0 keeps its input queues full


@dataclass
class TrialResult:
    """What a fault trial found: the faults injected, recovery times, the exactly-once report, its outcome,
    and anything it left running or on disk.
    """

    seed: int
    settings: TrialSettings
    faults: Counter = field(default_factory=Counter)
    recovery_ms: list[float] = field(default_factory=list)
    report: ExactlyOnceReport | None = None
    outcome: str = "ok"  # "ok", "failed as expected: ..." (CORRUPT), or what went wrong
    in_flight_bytes: list[int] = field(default_factory=list)  # per fault: the latest checkpoint's channel state
    left_running: list[str] = field(default_factory=list)  # processes of the job still running after it (step 4)
    left_on_disk: list[str] = field(default_factory=list)  # files and directories it left (step 4)

    @property
    def left_nothing(self) -> bool:
        """Whether no process of the job runs on and no file was left behind."""
        return not self.left_running and not self.left_on_disk

    @property
    def passed(self) -> bool:
        """Whether the trial passed: exactly once (or, for a corrupt checkpoint, failed as expected with nothing
        duplicated) and nothing left behind.
        """
        if self.outcome.startswith("failed as expected"):
            return (
                self.report is not None
                and self.report.duplicated == 0
                and self.report.out_of_order == 0
                and not self.left_running
            )
        return self.outcome == "ok" and self.report is not None and self.report.exactly_once and self.left_nothing


def completed_checkpoints(directory: Path) -> dict[int, Path]:
    """chk id → directory of every completed checkpoint under `directory` (its `_metadata` is written last)."""
    found = {}
    for metadata in directory.glob("*/chk-*/_metadata"):
        match = re.fullmatch(r"chk-(\d+)", metadata.parent.name)
        if match:
            found[int(match.group(1))] = metadata.parent
    return found


class FaultTrial:
    """One seeded trial (module docstring) in `workdir`, injecting `plan` (fault kinds, in order)."""

    def __init__(
        self,
        workdir: Path,
        seed: int,
        plan: list[FaultKind],
        settings: TrialSettings = TrialSettings(),
        task_managers: TaskManagerProcesses | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.random = random.Random(seed)
        self.plan = list(plan)
        self.settings = settings
        self.result = TrialResult(seed, settings)
        self._task_managers = task_managers or (
            ForkedTaskManagers(lambda: self._process.pid) if settings.mode == "process" else None
        )
        self.checkpoints = self.workdir / "checkpoints"
        self.out = self.workdir / "out"
        self.triggers = self.workdir / "triggers"
        self.plan_done = self.workdir / "plan-done"  # step 3 of the module docstring
        self._process: subprocess.Popen | None = None
        self._runs = 0
        self._mounts: list[Path] = []
        self._triggered = 0

    # -- the trial ----------------------------------------------------------------------------------------------

    def run(self) -> TrialResult:
        """Run the trial: the job in its own process, the planned faults injected, the output checked.

        Returns:
            The TrialResult.
        """
        for directory in (self.checkpoints, self.out, self.triggers, self.workdir / "tmp"):
            directory.mkdir(parents=True, exist_ok=True)
        try:
            if FaultKind.FILL_DISK in self.plan:
                self._mount_tmpfs(self.checkpoints)
            self._start()
            for kind in self.plan:
                if self._finished():
                    break  # the stream ended before the rest of the plan: those faults are not injected
                self._await_progress()
                time.sleep(self.random.uniform(0, 0.3))
                if self._inject(kind) is False:
                    return self._judge()
            self.plan_done.touch()
            self._await_end()
            return self._judge()
        except FaultUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 - a trial that cannot go on is reported, not raised
            self.result.outcome = f"{type(error).__name__}: {error}"
            return self._judge()
        finally:
            self._stop()
            for mount in reversed(self._mounts):
                subprocess.run(["umount", str(mount)], check=False, capture_output=True)
            self._account_for_leftovers()

    def _account_for_leftovers(self) -> None:
        """Step 4 of the module docstring."""
        marker = str(self.workdir)
        deadline = time.monotonic() + LEFTOVER_GRACE_S
        while (running := processes_with(TRIAL_VARIABLE, marker)) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in running:
            self.result.left_running.append(f"pid {pid}: {_command_line(pid)}")
            if pid_running(pid):
                kill(pid)  # a process of this trial's job: it must not outlive the trial
        temporary = self.workdir / "tmp"
        self.result.left_on_disk += sorted(str(p.relative_to(self.workdir)) for p in temporary.iterdir())
        for path in temporary.iterdir():
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        if not self.result.outcome.startswith("failed as expected"):  # a failed job may leave what it may commit
            self.result.left_on_disk += sorted(
                str(p.relative_to(self.workdir)) for p in self.out.rglob(".*") if p.is_file()
            )

    def _judge(self) -> TrialResult:
        self.result.report = verify_sequences(self.out, self.settings.keys, self.settings.per_key)
        return self.result

    def _start(self, restore: Path | None = None) -> None:
        s = self.settings
        args = [
            *python_command("-m", "fluvial.testing.fault_job"),
            "--checkpoints",
            str(self.checkpoints),
            "--out",
            str(self.out),
            "--triggers",
            str(self.triggers),
            "--keys",
            str(s.keys),
            "--per-key",
            str(s.per_key),
            "--rate",
            str(s.rate),
            "--parallelism",
            str(s.parallelism),
            "--backend",
            s.backend,
            "--mode",
            s.mode,
            "--interval-ms",
            str(s.interval_ms),
            "--pace-us",
            str(s.pace_us),
            "--hold-until",
            str(self.plan_done),
        ]
        if s.unaligned:
            args.append("--unaligned")
        if restore is not None:
            args += ["--restore", str(restore)]
        self._runs += 1
        log = open(self.workdir / f"run-{self._runs}.log", "wb")
        env = dict(os.environ, TMPDIR=str(self.workdir / "tmp"), **{TRIAL_VARIABLE: str(self.workdir)})
        self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()

    def _stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(30)

    def _finished(self) -> bool:
        return self._process is not None and self._process.poll() == 0

    def _latest(self) -> int:
        return max(completed_checkpoints(self.checkpoints), default=0)

    def _await_progress(self, since: int | None = None) -> None:
        """Until a checkpoint completed after checkpoint `since` (default: the latest now), or the job finished
        (its final checkpoint is one)."""
        since = self._latest() if since is None else since
        self._wait(lambda: self._latest() > since or self._finished(), "a checkpoint after the last fault")

    def _wait(self, condition, what: str, timeout: float | None = None) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + (timeout or self.settings.timeout_s)
        while not condition():
            if self._process is not None and self._process.poll() not in (None, 0):
                raise RuntimeError(
                    f"the job ended (exit {self._process.returncode}) while waiting for {what}; "
                    f"see {self.workdir}/run-{self._runs}.log"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} within {timeout or self.settings.timeout_s} s")
            time.sleep(0.005)

    def _await_end(self) -> None:
        process = self._process
        try:
            code = process.wait(self.settings.timeout_s)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"the job did not finish within {self.settings.timeout_s} s") from None
        if code != 0:
            raise RuntimeError(f"the job failed (exit {code}); see {self.workdir}/run-{self._runs}.log")

    def _recovered_after(self, before: int, started: float) -> None:
        self._await_progress(before)
        self.result.recovery_ms.append((time.monotonic() - started) * 1000)

    # -- faults -------------------------------------------------------------------------------------------------

    def _inject(self, kind: FaultKind) -> bool | None:
        """Inject one fault and wait for the recovery; False when the trial ends with it (CORRUPT)."""
        before, started = self._latest(), time.monotonic()
        self.result.faults[kind] += 1
        if self.settings.unaligned:
            self.result.in_flight_bytes.append(self._in_flight_bytes(before))
        if kind is FaultKind.KILL:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(30)
            self._start(restore=completed_checkpoints(self.checkpoints)[self._latest()])
        elif kind is FaultKind.RAISE:
            self._trigger()
        elif kind is FaultKind.CORRUPT:
            return self._corrupt_then_fail()
        elif kind is FaultKind.FILL_DISK:
            self._fill_disk_for(self.random.uniform(0.3, 1.0))
        elif kind is FaultKind.UNWRITABLE:
            self._unwritable_for(self.random.uniform(0.3, 1.0))
        elif kind is FaultKind.KILL_TASKMANAGER and not self._kill_task_manager():
            self.result.faults[kind] -= 1  # the job finished before it had a TaskManager to kill
            return None
        self._recovered_after(before, started)
        return None

    def _in_flight_bytes(self, checkpoint_id: int) -> int:
        """Bytes of in-flight data (unaligned channel state) in completed checkpoint `checkpoint_id`; 0 when it
        has none or was subsumed and removed meanwhile."""
        from fluvial.checkpoint.storage import read_checkpoint_metadata

        location = completed_checkpoints(self.checkpoints).get(checkpoint_id)
        try:
            metadata = read_checkpoint_metadata(str(location)) if location is not None else None
        except Exception:  # noqa: BLE001 - a checkpoint discarded while read: nothing to count
            return 0
        if metadata is None:
            return 0
        return sum(
            handle.size
            for operator in metadata.operator_states.values()
            for state in operator.subtask_states.values()
            for handle in state.input_channel
        )

    def _trigger(self) -> None:
        self._triggered += 1
        (self.triggers / f"raise-{self._triggered}").touch()

    def _corrupt_then_fail(self) -> bool:
        """Kill the job, damage a state file of its latest checkpoint and start it from there: it must fail at
        once naming the file. (Killed first: a running job would take a newer, intact checkpoint before a
        failover reached the damaged one.)"""
        self._process.send_signal(signal.SIGKILL)
        self._process.wait(30)
        latest = completed_checkpoints(self.checkpoints)[self._latest()]
        files = sorted(p for p in latest.iterdir() if p.name != "_metadata" and p.is_file())
        if not files:
            raise RuntimeError(f"checkpoint {latest} holds no state file to corrupt")
        victim = self.random.choice(files)
        data = bytearray(victim.read_bytes())
        data[len(data) // 2] ^= 0xFF
        victim.write_bytes(bytes(data))
        self._start(restore=latest)
        try:
            code = self._process.wait(self.settings.timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError("the job did not fail on its corrupt checkpoint: a restart loop") from None
        log = (self.workdir / f"run-{self._runs}.log").read_text(errors="replace")
        if code == 0 or "CorruptCheckpointError" not in log or str(victim) not in log:
            raise RuntimeError(f"the job ended (exit {code}) without naming the corrupt file {victim}")
        self.result.outcome = f"failed as expected: the corrupt file {victim.name} was named"
        return False

    def _mount_tmpfs(self, directory: Path) -> None:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.settings.disk_bytes},mode=0700", "tmpfs", str(directory)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise FaultUnavailable(
                f"{FaultKind.FILL_DISK.value} needs a small tmpfs, and mounting one failed "
                f"({done.stderr.strip() or done.returncode}): run as root or with CAP_SYS_ADMIN"
            )
        self._mounts.append(directory)

    def _fill_disk_for(self, seconds: float) -> None:
        filler = self.checkpoints / ".filler"
        try:
            with open(filler, "wb") as out:
                while True:
                    out.write(b"\0" * (1 << 20))
                    out.flush()
        except OSError:
            pass  # ENOSPC: the disk is full
        time.sleep(seconds)
        filler.unlink()

    def _unwritable_for(self, seconds: float) -> None:
        job_dir = completed_checkpoints(self.checkpoints)[self._latest()].parent  # the running job's directory
        if os.geteuid() == 0:
            done = subprocess.run(["mount", "--bind", str(job_dir), str(job_dir)], capture_output=True, text=True)
            if done.returncode != 0:
                raise FaultUnavailable(
                    f"{FaultKind.UNWRITABLE.value}: file modes do not stop root and a bind "
                    f"mount failed ({done.stderr.strip()})"
                )
            try:
                for _ in range(200):  # a mount cannot turn read-only while a file on it is open for writing
                    done = subprocess.run(
                        ["mount", "-o", "remount,ro,bind", str(job_dir)], capture_output=True, text=True
                    )
                    if done.returncode == 0 or "busy" not in done.stderr:
                        break
                    time.sleep(0.005)
                if done.returncode != 0:
                    raise FaultUnavailable(
                        f"{FaultKind.UNWRITABLE.value}: file modes do not stop root and "
                        f"remounting read-only failed ({done.stderr.strip()})"
                    )
                time.sleep(seconds)
            finally:
                subprocess.run(["umount", "-l", str(job_dir)], check=True, capture_output=True)
        else:
            mode = job_dir.stat().st_mode
            job_dir.chmod(0o500)
            time.sleep(seconds)
            job_dir.chmod(mode)

    def _kill_task_manager(self) -> bool:
        """SIGKILL one TaskManager process of the job; False when the job finished first."""
        if self._task_managers is None:
            raise FaultUnavailable(
                f"{FaultKind.KILL_TASKMANAGER.value} needs TaskManager processes: run the trial "
                "in process mode (TrialSettings(mode='process'))"
            )
        task_managers, pids = self._task_managers, []

        def started() -> bool:
            pids[:] = task_managers.pids()
            return bool(pids) or self._finished()

        self._wait(started, "the job's TaskManager processes")
        if not pids:
            return False
        os.kill(self.random.choice(pids), signal.SIGKILL)
        return True


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


def run_trial(
    workdir: Path, seed: int, plan: list[FaultKind], settings: TrialSettings = TrialSettings(), keep: bool = False
) -> TrialResult:
    """One trial in `workdir` (removed afterwards unless `keep`, or unless the trial failed)."""
    result = FaultTrial(workdir, seed, plan, settings).run()
    if not keep and result.passed:
        shutil.rmtree(workdir, ignore_errors=True)
    return result
