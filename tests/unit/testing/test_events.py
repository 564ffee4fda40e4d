"""EventLog: events from any thread of any process come back whole, typed, in append order."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading

import pytest

from fluvial.testing import EventLog


def test_values_keep_their_types_and_order(tmp_path):
    log = EventLog(tmp_path / "events")
    assert log.events() == [] and log.count("x") == 0  # nothing recorded yet: no file, no events
    log.record("open", (0, "a"))
    log.record_all("value", [1, 2.5, None, {"k": [1]}])
    log.record("close")
    assert log.events() == [
        ("open", (0, "a")),
        ("value", 1),
        ("value", 2.5),
        ("value", None),
        ("value", {"k": [1]}),
        ("close", None),
    ]
    assert log.values("value") == [1, 2.5, None, {"k": [1]}]
    assert log.count("close") == 1
    assert pickle.loads(pickle.dumps(log)) == log  # travels with the function that holds it


def test_a_line_still_being_written_is_not_read(tmp_path):
    log = EventLog(tmp_path / "events")
    log.record("whole", 1)
    with open(log.path, "ab") as handle:
        handle.write(b"gAWV")  # the start of an event whose write has not finished
    assert log.events() == [("whole", 1)]


@pytest.mark.timeout(60)
def test_appends_from_threads_and_processes_never_interleave(tmp_path):
    log = EventLog(tmp_path / "events")
    script = (
        "import sys; from fluvial.testing import EventLog; log = EventLog(sys.argv[1]); "
        "[log.record('process', (int(sys.argv[2]), i, 'x' * 300)) for i in range(200)]"
    )
    processes = [subprocess.Popen([sys.executable, "-c", script, log.path, str(p)]) for p in range(3)]
    threads = [
        threading.Thread(target=lambda t=t: [log.record("thread", (t, i)) for i in range(200)]) for t in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [p.wait(30) for p in processes] == [0, 0, 0]
    by_process = log.values("process")
    assert sorted(by_process) == sorted((p, i, "x" * 300) for p in range(3) for i in range(200))
    for p in range(3):  # each writer's events in the order it wrote them
        assert [i for q, i, _ in by_process if q == p] == list(range(200))
    assert sorted(log.values("thread")) == sorted((t, i) for t in range(3) for i in range(200))
