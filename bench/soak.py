"""Soak: N seeded fault trials per state backend and execution mode, and the table of issue 13.

    python -m bench.soak --trials 100 --faults-per-trial 4
    python -m bench.soak --unaligned --trials 25 --modes thread,process --faults kill,kill_taskmanager,raise

Each trial runs the fault job (`fluvial.testing.fault_job`: per-key sequences → a verifying operator → an
exactly-once FileSink) in a process of its own and injects a seeded plan of faults into it
(`fluvial.testing.faults`): SIGKILLs of the job's process (restarted from its latest checkpoint), exceptions in
user code, a full checkpoint disk (a small tmpfs), an unwritable checkpoint directory, and — one trial in ten —
a corrupted checkpoint, which must fail the job at once naming the file; in process mode also SIGKILLs of one
TaskManager process (a failover onto a replacement process). The table counts, over the committed
output of every trial, the records lost, duplicated and out of order (all must be 0), and the recovery time
from each fault to the first checkpoint completed after it. A fault this machine cannot inject (mounting a
tmpfs needs privileges; TaskManager processes need process mode) is reported, not faked. The last two columns
count what the trials left behind (`fluvial.testing.faults`, step 4): processes of a job still running after it
ended, and files left on disk (RocksDB working directories in the job's temporary directory, hidden part files
in the output of a finished job). Both must be 0; what was left is listed under the table.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fluvial.testing.execution import ExecutionMode
from fluvial.testing.faults import FaultKind, FaultUnavailable, TrialResult, TrialSettings, run_trial

SHORT = {
    FaultKind.KILL: "kill",
    FaultKind.RAISE: "raise",
    FaultKind.FILL_DISK: "disk",
    FaultKind.UNWRITABLE: "unwritable",
    FaultKind.CORRUPT: "corrupt",
    FaultKind.KILL_TASKMANAGER: "tm-kill",
}
WEIGHTS = {
    FaultKind.KILL: 4,
    FaultKind.KILL_TASKMANAGER: 2,
    FaultKind.RAISE: 2,
    FaultKind.FILL_DISK: 1,
    FaultKind.UNWRITABLE: 1,
}
MODES = {"thread": ExecutionMode.THREADS, "process": ExecutionMode.PROCESSES}


def plan_for(seed: int, trial: int, per_trial: int, kinds: list[FaultKind]) -> list[FaultKind]:
    """Seeded: `per_trial` faults weighted toward kills; one trial in ten ends with a corrupt checkpoint."""
    rng = random.Random(seed * 1_000_003 + trial)
    recoverable = [kind for kind in kinds if kind in WEIGHTS]
    plan = rng.choices(recoverable, [WEIGHTS[kind] for kind in recoverable], k=per_trial) if recoverable else []
    if FaultKind.CORRUPT in kinds and trial % 10 == 9:
        plan = plan[: per_trial - 1] + [FaultKind.CORRUPT]
    return plan


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def soak(
    backend: str, mode: ExecutionMode, args: argparse.Namespace, kinds: list[FaultKind], root: Path
) -> list[TrialResult]:
    settings = TrialSettings(
        keys=args.keys,
        per_key=args.per_key,
        backend=backend,
        mode=mode.value,
        unaligned=args.unaligned,
        pace_us=args.pace_us if args.unaligned else 0,
        rate=args.rate,
    )
    results = []
    for trial in range(args.trials):
        seed = args.seed + trial
        plan = plan_for(args.seed, trial, args.faults_per_trial, kinds)
        workdir = root / f"{backend}-{mode.value}-{trial}"
        while True:
            try:
                shutil.rmtree(workdir, ignore_errors=True)
                result = run_trial(workdir, seed, plan, settings)
                break
            except FaultUnavailable as missing:
                print(f"  not injected: {missing}", file=sys.stderr)
                unavailable = {kind for kind in FaultKind if kind.value in str(missing)}
                kinds[:] = [kind for kind in kinds if kind not in unavailable]
                plan = [kind for kind in plan if kind not in unavailable]
        results.append(result)
        mark = "." if result.passed else "F"
        print(mark, end="", file=sys.stderr, flush=True)
        if not result.passed:
            print(
                f"\n  trial {trial} (seed {seed}, {backend}) failed: {result.outcome}; {result.report}; "
                f"kept in {workdir}",
                file=sys.stderr,
            )
    print(file=sys.stderr)
    return results


def row(backend: str, mode: ExecutionMode, results: list[TrialResult]) -> str:
    faults: Counter = Counter()
    for result in results:
        faults.update(result.faults)
    reports = [r.report for r in results if r.report is not None]
    completed = [r for r in reports if r is not None]
    lost = sum(r.lost for result, r in zip(results, completed) if not result.outcome.startswith("failed as"))
    duplicated = sum(r.duplicated for r in completed)
    out_of_order = sum(r.out_of_order for r in completed)
    recoveries = [ms for result in results for ms in result.recovery_ms]
    failed = sum(not result.passed for result in results)
    injected = "/".join(str(faults[kind]) for kind in SHORT if kind in faults) or "0"
    kinds = "/".join(SHORT[kind] for kind in SHORT if kind in faults)
    running = sum(len(result.left_running) for result in results)
    on_disk = sum(len(result.left_on_disk) for result in results)
    return (
        f"| {backend} | {mode.value} | {len(results)} | {sum(faults.values())} ({injected} {kinds}) | {lost} | "
        f"{duplicated} | {out_of_order} | {failed} | {percentile(recoveries, 0.5):.0f} ms | "
        f"{percentile(recoveries, 0.99):.0f} ms | {running} | {on_disk} |"
    )


def leftovers(backend: str, mode: ExecutionMode, results: list[TrialResult]) -> list[str]:
    return [
        f"- {backend}/{mode.value} seed {result.seed}: {what}"
        for result in results
        for what in [*result.left_running, *result.left_on_disk]
    ]


def main(argv: list[str] | None = None) -> bool:
    parser = argparse.ArgumentParser(prog="python -m bench.soak")
    parser.add_argument("--trials", type=int, default=20, help="trials per backend and mode")
    parser.add_argument("--faults-per-trial", type=int, default=4)
    parser.add_argument("--backends", default="hashmap,rocksdb")
    parser.add_argument("--modes", default="thread,process", help="execution modes: thread, process")
    parser.add_argument(
        "--faults",
        default="kill,kill_taskmanager,raise,fill_disk,unwritable,corrupt",
        help="kill_taskmanager is injected in process mode only",
    )
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--per-key", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--rate", type=int, default=4000, help="records per second per source subtask")
    parser.add_argument(
        "--unaligned",
        action="store_true",
        help="unaligned checkpoints, with the verifying task paced (--pace-us) so that its input "
        "channels stay full and every checkpoint carries in-flight data",
    )
    parser.add_argument("--pace-us", type=int, default=800, help="with --unaligned: microseconds per record")
    parser.add_argument("--workdir", help="where trials run (default: a temporary directory)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # cleanups (mounts) still run
    kinds = [FaultKind[name.strip().upper()] for name in args.faults.split(",") if name.strip()]
    root = Path(args.workdir or tempfile.mkdtemp(prefix="fluvial-soak-"))
    rows, left, ok = [], [], True
    started = time.monotonic()
    modes = [MODES[name.strip()] for name in args.modes.split(",") if name.strip()]
    for backend in args.backends.split(","):
        for mode in modes:
            modal = [
                kind
                for kind in kinds  # a thread-mode job has no TaskManager process to kill
                if kind is not FaultKind.KILL_TASKMANAGER or mode is not ExecutionMode.THREADS
            ]
            print(f"{backend} / {mode.value}: {args.trials} trials", file=sys.stderr)
            results = soak(backend, mode, args, modal, root)
            ok &= all(result.passed for result in results)
            rows.append(row(backend, mode, results))
            left += leftovers(backend, mode, results)
    checkpoints = "unaligned checkpoints, in-flight data persisted" if args.unaligned else "aligned checkpoints"
    print(
        f"Soak: {args.trials} seeded trials per backend and mode, {args.faults_per_trial} faults each, "
        f"{checkpoints} ({time.monotonic() - started:.0f} s)"
    )
    print(
        "| backend | mode | trials | faults injected | lost | duplicated | out-of-order | failed trials | "
        "recovery p50 | recovery p99 | left running | left on disk |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for line in rows:
        print(line)
    if left:
        print("Left behind:")
        print("\n".join(left))
    if not args.workdir and not any(root.iterdir()):  # passed trials removed themselves; failed ones are kept
        root.rmdir()
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
