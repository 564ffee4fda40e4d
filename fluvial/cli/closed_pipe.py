"""Ending quietly when the reader of our output goes away, as a Unix tool does in `fluvial run job.py | head`.

A Unix tool dies of SIGPIPE at its first write after `head` exits. Python ignores SIGPIPE and raises
BrokenPipeError instead; left alone, the print sink would fail the job (and its restart strategy would restart
it into the same closed pipe), and the interpreter would print a traceback on its way out. While a PipeWatch is
active, sys.stdout and sys.stderr are GuardedStreams, and a closed reader is handled once, in this order:

1. It is noticed either by a write that raises BrokenPipeError, or, for a pipe or socket, by a watcher thread
   that polls the descriptor for the error the kernel reports when the last reader closes (a job that prints
   rarely, or prints from a place that bypasses sys.stdout, is ended all the same).
2. `on_close` runs on a thread of its own (never on the task thread that wrote, which it may need to cancel).
3. From then on, a write through the guard from any other thread (a task's print sink, while it is being
   cancelled) is discarded; one from the main thread raises ClosedPipe, which ends the job file as SIGPIPE
   ends a Unix tool. A write that bypasses the guard (`sys.stdout.buffer`, `sys.__stdout__`) still fails with
   BrokenPipeError, and so still ends what made it.
4. On leaving the watch, a broken stream's descriptor is pointed at /dev/null, so that the interpreter's final
   flush of what is left in its buffer succeeds silently instead of printing a traceback.
"""

from __future__ import annotations

import logging
import os
import select
import stat
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

logger = logging.getLogger(__name__)

_READER_GONE = getattr(select, "POLLERR", 0) | getattr(select, "POLLHUP", 0)


class ClosedPipe(BaseException):
    """Raised in the main thread at a write after the reader went away. A BaseException, so that the job file's
    own `except Exception:` cannot swallow it and run on, writing into nothing."""


class GuardedStream:
    """Stands in for sys.stdout or sys.stderr: writes through to `stream` until its reader goes away."""

    def __init__(self, stream: TextIO, on_broken: Callable[[GuardedStream], None]) -> None:
        self.stream = stream
        self.broken = False
        self._on_broken = on_broken

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._on_broken(self)
        return _discard(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._on_broken(self)

    def fileno(self) -> int:
        return self.stream.fileno()

    def __getattr__(self, name: str) -> Any:
        # encoding, isatty, buffer, ...: everything else is the real stream's
        return getattr(self.stream, name)


def _discard(text: str) -> int:
    if threading.current_thread() is threading.main_thread():
        raise ClosedPipe()
    return len(text)


class PipeWatch:
    """Guards sys.stdout and sys.stderr while active; calls `on_close` once when a reader of either goes away."""

    def __init__(self, on_close: Callable[[], None]) -> None:
        self._on_close = on_close
        self._lock = threading.Lock()
        self._closed = False
        self._saved: tuple[TextIO, TextIO] | None = None
        self._streams: tuple[GuardedStream, ...] = ()
        self._watcher: threading.Thread | None = None
        self._wake_write: int | None = None

    @property
    def closed(self) -> bool:
        """Whether a reader of our output went away."""
        return self._closed

    def check_now(self) -> bool:
        """Look at both descriptors now, and handle a reader that went away as a failed write would. For when a
        BrokenPipeError surfaced elsewhere (a write to `sys.stdout.buffer`, another process) and the watcher may
        not have run yet. Returns `closed`."""
        for stream in self._streams:
            fd = _descriptor(stream)
            if not stream.broken and fd is not None and _is_pipe_or_socket(fd) and _reader_gone(fd):
                self._stream_broke(stream)
        return self._closed

    def __enter__(self) -> PipeWatch:
        self._saved = (sys.stdout, sys.stderr)
        stdout, stderr = (GuardedStream(stream, self._stream_broke) for stream in self._saved)
        self._streams = (stdout, stderr)
        sys.stdout, sys.stderr = stdout, stderr  # type: ignore[assignment]
        self._start_watcher(stdout)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._wake_write is not None:
            try:
                os.write(self._wake_write, b"x")
            except OSError:  # the watcher already returned and closed its end
                pass
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        if self._wake_write is not None:
            os.close(self._wake_write)
        for stream in self._streams:
            if stream.broken:
                _silence(stream)
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved

    def _stream_broke(self, stream: GuardedStream) -> None:
        with self._lock:
            if stream.broken:
                return
            stream.broken = True
            first = not self._closed
            self._closed = True
        if first:
            logger.info("the reader of our output went away; cancelling the job")
            threading.Thread(target=self._on_close, name="fluvial-cli-output-closed", daemon=True).start()

    # -- the watcher ----------------------------------------------------------------------------------------------

    def _start_watcher(self, stream: GuardedStream) -> None:
        """Watch `stream`'s descriptor if it is a pipe or socket (a file or terminal has no reader to lose)."""
        fd = _descriptor(stream)
        if fd is None or not hasattr(select, "poll") or not _is_pipe_or_socket(fd):
            return
        wake_read, self._wake_write = os.pipe()
        self._watcher = threading.Thread(
            target=self._watch, args=(stream, fd, wake_read), name="fluvial-cli-output-watch", daemon=True
        )
        self._watcher.start()

    def _watch(self, stream: GuardedStream, fd: int, wake_read: int) -> None:
        """Block until `fd`'s last reader closes (POLLERR for a pipe, POLLHUP for a socket) or we are woken."""
        poller = select.poll()
        poller.register(fd, 0)  # no events asked for: only the error and hang-up conditions are reported
        poller.register(wake_read, select.POLLIN)
        try:
            while True:
                events = dict(poller.poll())
                if wake_read in events:
                    return
                if events.get(fd, 0) & _READER_GONE:
                    self._stream_broke(stream)
                    return
                if events.get(fd, 0) & select.POLLNVAL:
                    return
        finally:
            os.close(wake_read)


def _descriptor(stream: GuardedStream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None


def _reader_gone(fd: int) -> bool:
    """Whether the last reader of the pipe or socket `fd` has closed it, without waiting."""
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(fd, 0)
    return any(events & _READER_GONE for _, events in poller.poll(0))


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _silence(stream: GuardedStream) -> None:
    """Point the broken stream's descriptor at /dev/null (step 4 of the module's protocol)."""
    fd = _descriptor(stream)
    if fd is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
