"""A TaskManager's process as Flink's `Status.JVM.*` metrics describe a TaskManager's JVM: CPU time and load,
memory, threads, garbage collections — for a Python process, under `Status.Python.*` (the same names with
Python for JVM; RSS for the heap, which Python does not size). Read from /proc for any process of this machine;
the garbage collector's counts only for this process (another process's are not readable from here)."""

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


def process_status(pid: int) -> ProcessStatus | None:
    """The status of process `pid` now; None when it cannot be read (gone, or no /proc)."""
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
    collections = tuple(stats["collections"] for stats in gc.get_stats()) if pid == os.getpid() else ()
    return ProcessStatus(pid, int(cpu_seconds * 1000), max(0.0, load), rss, threads, collections)
