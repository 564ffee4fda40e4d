"""Ctrl-C in a program that catches KeyboardInterrupt leaves no job running (issue 13, defect 7).

Each case runs a program in its own process (a real SIGINT must reach a real main thread, and pytest's own
must not see it): an endless job counts the records its sink sees; once records flow, the test sends SIGINT.
The program catches the KeyboardInterrupt, then counts again half a second later. The job must have been
cancelled before the interrupt reached the program: no record arrives after it, and the job is CANCELED.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

PROGRAM = textwrap.dedent("""
    import sys, time
    from fluvial.common.job_status import JobStatus
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource
    import fluvial.datastream.stream_execution_environment as environment_module

    how, started = sys.argv[1], sys.argv[2]
    seen = [0]
    clients = []

    def sink(value):
        seen[0] += 1
        if seen[0] == 1000:
            open(started, "w").close()

    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_source(NumberSequenceSource(0, 10**12)).map(lambda v: v)
    submit = env._submit
    env._submit = lambda pipeline: clients.append(submit(pipeline)) or clients[-1]
    try:
        if how == "execute":
            stream.add_sink(sink)
            env.execute("endless")
        else:
            for value in stream.execute_and_collect():
                sink(value)
    except KeyboardInterrupt:
        at_interrupt = seen[0]
        status = clients[0].get_job_status().result()
        time.sleep(0.5)
        print(f"status={status.name} more={seen[0] - at_interrupt}", flush=True)
""")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["execute", "execute_and_collect"])
def test_keyboard_interrupt_cancels_the_job_before_it_propagates(tmp_path: Path, how: str) -> None:
    program = tmp_path / "endless.py"
    program.write_text(PROGRAM)
    started = tmp_path / "started"
    process = subprocess.Popen(
        [sys.executable, str(program), how, str(started)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the job never got going"
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=40)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out.strip() == "status=CANCELED more=0", (out, err)  # cancelled before the interrupt reached the program
