"""PipeWatch on a real pipe: writes pass while the reader is there; once it is gone `on_close` runs once, other
threads' writes are dropped, the main thread's raise ClosedPipe, and on leaving the broken descriptor points at
/dev/null."""

from __future__ import annotations

import io
import os
import sys
import threading
import time

import pytest

from fluvial.cli.closed_pipe import ClosedPipe, PipeWatch


class Pipe:
    """An os.pipe whose write end is a text stream standing in for sys.stdout."""

    def __init__(self) -> None:
        self.read_fd, write_fd = os.pipe()
        self.stream = io.TextIOWrapper(io.FileIO(write_fd, "w"), write_through=True)

    def read(self) -> str:
        return os.read(self.read_fd, 1 << 16).decode()

    def close_reader(self) -> None:
        os.close(self.read_fd)
        self.read_fd = -1

    def close(self) -> None:
        if self.read_fd >= 0:
            os.close(self.read_fd)
        self.stream.close()


@pytest.fixture
def pipe_as_stdout(monkeypatch):
    """A Pipe, made sys.stdout once the test body runs (pytest sets its own capture streams after fixtures)."""
    pipe = Pipe()

    def use() -> Pipe:
        monkeypatch.setattr(sys, "stdout", pipe.stream)
        return pipe

    yield use
    pipe.close()


class Calls:
    def __init__(self) -> None:
        self.count = 0
        self.done = threading.Event()

    def __call__(self) -> None:
        self.count += 1
        self.done.set()


def in_thread(action) -> object:
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(action()))
    worker.start()
    worker.join(timeout=10)
    return outcome[0]


def test_writes_pass_through_while_the_reader_is_there(pipe_as_stdout):
    pipe = pipe_as_stdout()
    calls = Calls()
    with PipeWatch(calls) as watch:
        print("hello")
        sys.stdout.flush()
        assert pipe.read() == "hello\n"
        assert not watch.closed
    assert calls.count == 0
    assert sys.stdout is pipe.stream  # restored


@pytest.mark.timeout(20)
def test_a_write_into_a_closed_pipe_closes_once_and_drops_other_threads_writes(pipe_as_stdout):
    pipe = pipe_as_stdout()
    calls = Calls()
    with PipeWatch(calls) as watch:
        pipe.close_reader()
        assert in_thread(lambda: sys.stdout.write("lost\n")) == len("lost\n")
        assert in_thread(lambda: sys.stdout.write("lost again\n")) == len("lost again\n")
        assert calls.done.wait(10)
        assert watch.closed
        with pytest.raises(ClosedPipe):
            print("from the main thread")
        sys.stdout.flush()  # never raises: a flush has nothing of its own to lose
        with pytest.raises(BrokenPipeError):
            os.write(pipe.stream.fileno(), b"bypassing the guard fails, as it would without fluvial")
    assert calls.count == 1
    os.write(pipe.stream.fileno(), b"after the watch")  # the descriptor goes to /dev/null: a final flush is silent


@pytest.mark.timeout(20)
def test_the_watcher_notices_a_reader_that_goes_away_while_nothing_is_written(pipe_as_stdout):
    pipe = pipe_as_stdout()
    calls = Calls()
    with PipeWatch(calls) as watch:
        pipe.close_reader()
        assert calls.done.wait(10), "the watcher did not notice the closed pipe"
        assert watch.closed
    os.write(pipe.stream.fileno(), b"silenced")


@pytest.mark.timeout(20)
def test_leaving_the_watch_stops_the_watcher_and_restores_the_streams(pipe_as_stdout):
    pipe = pipe_as_stdout()
    saved_err = sys.stderr
    before = {thread.name for thread in threading.enumerate()}
    with PipeWatch(Calls()):
        assert "fluvial-cli-output-watch" in {thread.name for thread in threading.enumerate()}
    deadline = time.monotonic() + 10
    while "fluvial-cli-output-watch" in {t.name for t in threading.enumerate()} - before:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert sys.stdout is pipe.stream and sys.stderr is saved_err


def test_streams_without_a_descriptor_are_guarded_without_a_watcher(monkeypatch):
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stdout", captured)
    with PipeWatch(Calls()) as watch:
        print("kept")
        assert "fluvial-cli-output-watch" not in {thread.name for thread in threading.enumerate()}
    assert captured.getvalue() == "kept\n"
    assert not watch.closed


def test_check_now_sees_a_reader_gone_before_the_watcher_does(pipe_as_stdout, monkeypatch):
    pipe = pipe_as_stdout()
    monkeypatch.setattr(PipeWatch, "_start_watcher", lambda self, stream: None)  # no watcher: only check_now
    calls = Calls()
    with PipeWatch(calls) as watch:
        assert not watch.check_now()
        pipe.close_reader()
        assert watch.check_now()
        assert calls.done.wait(10)
