"""`make lint`'s type check: mypy on fluvial with the settings of pyproject.toml's [tool.mypy] (strict on runtime,
cluster, checkpoint and state; non-strict on the rest), each top package held to the errors it still has.

`REMAINING` is the number of mypy errors each package still has; a package with none is not listed and must stay
clean. The check fails when a package has more errors than listed (a change brought new ones: fix them), and
when it has fewer (well done: lower its number here, so that the list only shrinks), printing the errors of the
packages that failed. Run it as `python .ci/typecheck.py` (or `make lint`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# package -> mypy errors it still has (issue 18 works them off); a package not listed has none.
REMAINING = {
    "common": 2,
    "datastream": 65,
    "table": 25,
    "testing": 14,
}

ERROR = re.compile(r"^fluvial/(?P<package>[^/:]+)[^:]*:\d+(?::\d+)?: error: ")


def package_of(name: str) -> str:
    return name.removesuffix(".py")


def main() -> int:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty"],
        cwd=ROOT,
        text=True,
        capture_output=True,
        check=False,
    )
    if run.returncode not in (0, 1) or run.stderr.strip():
        print(run.stdout + run.stderr, end="")
        print(f"mypy did not run to the end (exit {run.returncode})")
        return 2
    lines = run.stdout.splitlines()
    found = Counter(package_of(match["package"]) for line in lines if (match := ERROR.match(line)))
    failed = []
    for package in sorted(set(found) | set(REMAINING)):
        have, allowed = found.get(package, 0), REMAINING.get(package, 0)
        if have > allowed:
            failed.append(package)
            print(f"fluvial/{package}: {have} mypy errors, {allowed} allowed: fix the new ones (below)")
        elif have < allowed:
            failed.append(package)
            print(
                f"fluvial/{package}: {have} mypy errors, fewer than the {allowed} listed: lower its number in "
                f"REMAINING of {Path(__file__).relative_to(ROOT)}" + ("" if have else " (remove it: it is clean)")
            )
    grown = {package for package in failed if found.get(package, 0) > REMAINING.get(package, 0)}
    for line in lines:
        if (match := ERROR.match(line)) and package_of(match["package"]) in grown:
            print(line)
    if failed:
        return 1
    print(f"mypy: {sum(found.values())} errors left, as listed ({', '.join(sorted(REMAINING)) or 'none'}); no new ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
