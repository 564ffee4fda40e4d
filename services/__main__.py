"""`python -m services NAME...` (`make services`): start the named test servers for users trying the connector
examples, print where each listens and the environment variable the examples read, and stop them all by PID at
Ctrl-C. Each `services.NAME` module offers `serve()`, which starts its server and returns (the line to print, a
function that stops it)."""

from __future__ import annotations

import importlib
import signal
import sys
import time


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(names: list[str]) -> int:
    if not names:
        print("usage: python -m services NAME... (e.g. postgres)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops the servers too, as Ctrl-C does
    stops = []
    try:
        for name in dict.fromkeys(names):
            line, stop = importlib.import_module(f"services.{name}").serve()
            stops.append(stop)
            print(line, flush=True)
        print("servers running; Ctrl-C stops them", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        for stop in reversed(stops):
            stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
