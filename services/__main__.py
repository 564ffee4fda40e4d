"""`python -m services [NAME ...]` (what `make services` runs): start the named servers on their usual loopback
ports with data in a temporary directory, print where they listen, and stop them on Ctrl-C. For trying the
connector examples by hand; the tests start their own servers on free ports.

Each server is one entry of SERVICES: a module of this package and the function that starts it with
`(data_dir, port)`. Add a server by adding its entry."""

from __future__ import annotations

import argparse
import importlib
import logging
import shutil
import signal
import tempfile
import threading
from pathlib import Path

SERVICES = {
    # name: (module, start function)
    "nats": ("services.nats", "start_nats"),
    "mosquitto": ("services.mosquitto", "start_mosquitto"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(SERVICES), help=f"of {', '.join(SERVICES)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in SERVICES]
    if unknown:
        parser.error(f"unknown service(s) {', '.join(unknown)}; known: {', '.join(SERVICES)}")
    logging.basicConfig(level=logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="fluvial-services-"))
    running = []
    try:
        for name in args.names:
            module_name, function = SERVICES[name]
            module = importlib.import_module(module_name)
            server = getattr(module, function)(root / name, module.DEFAULT_PORT)
            running.append(server)
            print(f"{name}: {server.extra.get('url', server.address)} (pid {server.pid}, data in {root / name})",
                  flush=True)
        print("running; Ctrl-C stops them", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    finally:
        for server in reversed(running):
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
