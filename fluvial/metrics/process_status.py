"""A TaskManager's process as Flink's `Status.JVM.*` metrics describe a TaskManager's JVM: CPU time and load,
memory, threads, garbage collections — for a Python process, under `Status.Python.*` (the same names with
Python for JVM; RSS for the heap, which Python does not size). Read from /proc for any process of this machine;
the garbage collector's counts only by the process itself, so a TaskManager process sends its own with every
heartbeat (`gc_collections_payload` / `parse_gc_collections`) and its pool keeps the latest."""

from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_LOCK = threading.Lock()
_LAST_SAMPLE: dict[int, tuple[float, float]] = {}  # pid -> (monotonic seconds, CPU seconds) of the last reading


@dataclass(frozen=True, slots=True)
class ProcessStatus:
    pid: int
    cpu_time_ms: int
    cpu_load: float  # the share of one core used since the previous reading (Flink's Status.JVM.CPU.Load)
    rss_bytes: int
    threads: int
    gc_collections: tuple[int, ...] = ()  # per generation, this process only

    def metrics(self) -> dict[str, float]:
        """Flink's Status.JVM.* names, with Python for JVM."""
        values: dict[str, float] = {
            "Status.Python.CPU.Time": self.cpu_time_ms,
            "Status.Python.CPU.Load": round(self.cpu_load, 4),
            "Status.Python.Memory.RSS": self.rss_bytes,
            "Status.Python.Threads.Count": self.threads,
        }
        for generation, count in enumerate(self.gc_collections):
            values[f"Status.Python.GarbageCollector.Gen{generation}.Count"] = count
        return values


def gc_collections_payload() -> bytes:
    """This process's collections per garbage-collector generation, as a heartbeat carries them ("12,3,1")."""
    return ",".join(str(stats["collections"]) for stats in gc.get_stats()).encode()


def parse_gc_collections(payload: bytes) -> tuple[int, ...]:
    """The counts `gc_collections_payload` wrote; () for a payload that is not such a list (an older sender)."""
    try:
        return tuple(int(count) for count in payload.decode().split(","))
    except ValueError:
        return ()


def process_status(pid: int, gc_collections: tuple[int, ...] = ()) -> ProcessStatus | None:
    """The status of process `pid` now; None when it cannot be read (gone, or no /proc). The garbage collector's
    counts are this process's own, or `gc_collections` as process `pid` last reported them."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().decode(errors="replace").rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    cpu_seconds = (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime
    threads, rss = int(fields[17]), int(fields[21]) * _PAGE
    now = time.monotonic()
    with _LOCK:
        previous = _LAST_SAMPLE.get(pid)
        _LAST_SAMPLE[pid] = (now, cpu_seconds)
    load = (cpu_seconds - previous[1]) / (now - previous[0]) if previous and now > previous[0] else 0.0
    if pid == os.getpid():
        gc_collections = tuple(stats["collections"] for stats in gc.get_stats())
    return ProcessStatus(pid, int(cpu_seconds * 1000), max(0.0, load), rss, threads, gc_collections)
