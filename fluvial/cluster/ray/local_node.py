"""One node of a local Ray cluster, tied to the process that started it (`local_cluster.py`).

    python -m fluvial.cluster.ray.local_node RAY-START-ARGUMENTS...

runs `ray start --block RAY-START-ARGUMENTS...` as its child and holds it for as long as its stdin stays open: the
starting process keeps the write end of that pipe, so however it ends — `stop()`, an exception, SIGKILL — the pipe
closes, and this process stops the node. Stopping is SIGTERM to `ray start --block`, which then ends every Ray
process of the node (they are its children, and die with it by Ray's own fate sharing); if it has not ended after
STOP_WAIT_S, SIGKILL. This process exits with the node's exit status, also when the node ends on its own (a
failed start), so the starting process learns of that by this one's exit.

Why a process between: `ray start --block` only stops on a signal, and a child process is only signalled when its
parent dies through PR_SET_PDEATHSIG — which fires when the *thread* that started it ends, so a node started from
a short-lived thread would stop with that thread. This process starts the node from its only thread.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading

from fluvial.common.processes import python_command

STOP_WAIT_S = 30.0
_PR_SET_PDEATHSIG = 1
RAY_MAIN = "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when this (single-threaded) process dies, however it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the stdin pipe and stop() still end the node


def main(arguments: list[str]) -> None:
    node = subprocess.Popen(
        python_command("-c", RAY_MAIN, "start", "--block", *arguments),
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )
    stopping = threading.Event()

    def follow_node() -> None:
        status = node.wait()
        if not stopping.is_set():
            os._exit(status if status > 0 else 1)  # the node ended on its own: so does this process

    def stop(*_: object) -> None:
        stopping.set()
        node.terminate()
        try:
            status = node.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            node.kill()
            status = node.wait()
        os._exit(0 if status in (0, 1, -signal.SIGTERM) else 1)

    threading.Thread(target=follow_node, name="ray-node", daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the starting process, which closes the pipe
    try:
        sys.stdin.buffer.read()  # until the starting process closes the pipe, or dies
    finally:
        stop()


if __name__ == "__main__":
    main(sys.argv[1:])
