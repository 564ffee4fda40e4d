"""Soak of the PostgreSQL connectors: seeded fault trials (`fluvial.testing.postgres_trials`) per connector, and
the table of trials, faults, lost and duplicated records.

    python -m bench.postgres_soak [--trials 30] [--faults-per-trial 2] [--seed 1]

Every trial runs its job in process mode against one real server and injects a seeded plan of faults — SIGKILL of
a TaskManager process (three in four) or a restart of the server — each after a checkpoint completed and a random
moment more. The exactly-once JDBC sink and change capture into it must hold every (key, seq) exactly once and in
order per key; the at-least-once sink (an upsert) must lose nothing.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

from fluvial.testing.postgres_trials import PgFault, PgTrialResult, run_cdc_trial, run_jdbc_trial
from services.postgres import start_postgres

CONNECTORS = {
    "jdbc exactly once": lambda server, work, seed, plan: run_jdbc_trial(server, work, seed, plan, True),
    "jdbc at least once": lambda server, work, seed, plan: run_jdbc_trial(server, work, seed, plan, False),
    "postgres cdc": run_cdc_trial,
}


def plan_for(rng: random.Random, count: int) -> list[PgFault]:
    return [PgFault.RESTART_SERVER if rng.random() < 0.25 else PgFault.KILL_TASKMANAGER for _ in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--faults-per-trial", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=sorted(CONNECTORS), action="append")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops the server too, as Ctrl-C does
    server = start_postgres()
    failed: list[PgTrialResult] = []
    rows = []
    try:
        for name in args.only or list(CONNECTORS):
            totals, faults = Counter(), Counter()
            for trial in range(args.trials):
                seed = args.seed * 1000 + trial
                work = Path(tempfile.mkdtemp(prefix="pg-soak-"))
                result = CONNECTORS[name](server, work, seed, plan_for(random.Random(seed), args.faults_per_trial))
                faults.update(result.faults)
                totals.update(
                    expected=result.expected,
                    lost=result.lost,
                    duplicated=result.duplicated,
                    out_of_order=result.out_of_order,
                    restarts=result.restarts,
                )
                if result.passed:
                    shutil.rmtree(work, ignore_errors=True)
                else:
                    failed.append(result)
                print(
                    f"{name} trial {trial + 1}/{args.trials} seed {seed}: {result.outcome}; lost {result.lost}, "
                    f"duplicated {result.duplicated}, out of order {result.out_of_order} "
                    f"(restarts {result.restarts})",
                    flush=True,
                )
            rows.append((name, args.trials, faults, totals))
    finally:
        server.close()
    print("\nconnector            trials  TM kills  server restarts  records    lost  duplicated  out of order")
    for name, trials, faults, totals in rows:
        print(
            f"{name:<20} {trials:>6}  {faults[PgFault.KILL_TASKMANAGER]:>8}  {faults[PgFault.RESTART_SERVER]:>15}  "
            f"{totals['expected']:>7}  {totals['lost']:>6}  {totals['duplicated']:>10}  {totals['out_of_order']:>12}"
        )
    for result in failed:
        print(f"FAILED: {result.connector} seed {result.seed}: {result.outcome}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
