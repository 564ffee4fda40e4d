"""Kafka fault soak: N trials of a Kafka-to-Kafka job with TaskManager processes SIGKILLed at random moments,
half of them the instant a checkpoint completes (between "checkpoint complete" and "transaction committed"),
judged by a read_committed consumer with a per-key sequence oracle (`fluvial.testing.kafka_faults`).

    python -m bench.kafka_faults --trials 50 --kills 2

Prints, per delivery guarantee, the trials, kills, and records lost / duplicated / out of order: all 0 for
EXACTLY_ONCE, lost 0 for AT_LEAST_ONCE (duplicates are what at-least-once allows).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_faults")
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--at-least-once-every", type=int, default=5, help="every Nth trial runs AT_LEAST_ONCE (the rest EXACTLY_ONCE)"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    from fluvial.testing.kafka_faults import run_kafka_trial
    from services.kafka import start_kafka

    totals: dict[str, dict[str, int]] = {}
    failed = []
    with tempfile.TemporaryDirectory(prefix="kafka-soak-") as tmp:
        broker = start_kafka(Path(tmp) / "broker")
        started = time.monotonic()
        try:
            for trial in range(args.trials):
                guarantee = "AT_LEAST_ONCE" if (trial + 1) % args.at_least_once_every == 0 else "EXACTLY_ONCE"
                seed = args.seed * 1_000_003 + trial
                result = run_kafka_trial(
                    broker.extra["bootstrap"], Path(tmp) / f"trial-{trial}", seed, guarantee, kills=args.kills
                )
                row = totals.setdefault(
                    guarantee,
                    dict.fromkeys(
                        ("trials", "passed", "kills", "at_checkpoint", "records", "lost", "duplicated", "out_of_order"),
                        0,
                    ),
                )
                row["trials"] += 1
                row["passed"] += result.passed
                row["kills"] += result.kills
                row["at_checkpoint"] += result.kills_at_checkpoint
                if result.report is not None:
                    row["records"] += result.report.expected
                    row["lost"] += result.report.lost
                    row["duplicated"] += result.report.duplicated
                    row["out_of_order"] += result.report.out_of_order
                status = "ok" if result.passed else f"FAILED ({result.outcome}; {result.report})"
                print(
                    f"trial {trial:3d} {guarantee:13s} kills {result.kills} ({result.kills_at_checkpoint} at a "
                    f"checkpoint): {result.report} {status}",
                    flush=True,
                )
                if not result.passed:
                    failed.append((trial, result))
        finally:
            broker.stop()
    print(f"\n{args.trials} trials in {time.monotonic() - started:.0f} s")
    print(
        f"{'guarantee':14s} {'trials':>6s} {'passed':>6s} {'kills':>6s} {'at chk':>6s} {'records':>8s} "
        f"{'lost':>5s} {'dup':>6s} {'order':>6s}"
    )
    for guarantee, row in totals.items():
        print(
            f"{guarantee:14s} {row['trials']:6d} {row['passed']:6d} {row['kills']:6d} {row['at_checkpoint']:6d} "
            f"{row['records']:8d} {row['lost']:5d} {row['duplicated']:6d} {row['out_of_order']:6d}"
        )
    for trial, result in failed:
        print(f"\ntrial {trial} failed: {result.outcome}\n{result.log}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
