"""`python -m bench`: run every benchmark and print records/s and ratios to the plain-Python loops."""

from __future__ import annotations

import sys

from bench import (
    batch_mode,
    checkpoints,
    event_time,
    heap_checkpoint,
    keyed_scaling,
    pyflink_jobs,
    spine,
    startup,
    threading_model,
)


def main() -> int:
    ok = spine.main()
    ok &= threading_model.main()
    ok &= event_time.main()
    ok &= checkpoints.main()
    ok &= heap_checkpoint.main([])
    ok &= startup.main()
    ok &= pyflink_jobs.main()
    ok &= keyed_scaling.main()
    ok &= batch_mode.main()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
