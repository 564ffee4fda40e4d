"""fluvial beside a peer: J1–J3 on Bytewax and on fluvial in one interleaved run, at parallelism 1 and 2
(`python -m bench.peers`; skipped, saying so, when Bytewax is not installed: `pip install bytewax`).

The same work on both, from a parallel source of numbers (Bytewax: a FixedPartitionedSource of one partition per
worker; fluvial: NumberSequenceSource), every record counted by a sink that writes its count to a file when it
closes, so nothing is collected to the client:
J1: numbers -> map(x*3) -> filter(even) -> map(x+1) -> sink.
J2: numbers -> Zipf word pairs -> keyed running count (Bytewax: key_on + stateful_map; fluvial: key_by + reduce,
    declared types as a PyFlink user writes them) -> sink.
J3: numbers -> events -> 60 s tumbling event-time windows, summed per key (Bytewax: reduce_window with an
    EventClock; fluvial: the bench.keyed_scaling job) -> sink. Bytewax's event clock also advances with system
    time, so it drops as late some events fluvial's bounded-out-of-orderness watermark keeps: its window count
    can be lower (the records/s are of the events read, on both).
Parallelism 2 is two processes on both (Bytewax: cluster_main over two loopback addresses; fluvial: two
TaskManager processes). Goal (issue 17): fluvial >= 2x Bytewax's records/s on every job at both parallelisms.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from bench.event_time import DISORDER_MS, WINDOW_MS, add_values, event_key, make_event
from bench.keyed_scaling import j3 as fluvial_j3
from bench.keyed_scaling import word_pair
from bench.process_mode import CountToFile, _counted, _environment, parallel_capacity
from bench.spine import add_counts, is_even, plus_one, triple, word_key

RECORDS = {"J1": 2_000_000, "J2": 1_000_000, "J3": 200_000}
BATCH = 1024
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _bytewax_installed() -> bool:
    try:
        import bytewax  # noqa: F401
    except ImportError:
        return False
    return True


# -- Bytewax ----------------------------------------------------------------------------------------------------


def _bytewax_flow(job: str, records: int, directory: str):
    import bytewax.operators as op
    import bytewax.operators.windowing as win
    from bytewax.dataflow import Dataflow
    from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
    from bytewax.outputs import DynamicSink, StatelessSinkPartition

    class _Numbers(StatefulSourcePartition):
        def __init__(self, start: int, stop: int) -> None:
            self._next, self._stop = start, stop

        def next_batch(self) -> list:
            if self._next >= self._stop:
                raise StopIteration()
            batch = list(range(self._next, min(self._next + BATCH, self._stop)))
            self._next += len(batch)
            return batch

        def snapshot(self) -> int:
            return self._next

    class Numbers(FixedPartitionedSource):
        """0 .. records-1 in two partitions (halves), spread over the workers."""

        def list_parts(self) -> list[str]:
            return ["0", "1"]

        def build_part(self, step_id: str, for_part: str, resume_state: object) -> _Numbers:
            half = records // 2
            return _Numbers(0, half) if for_part == "0" else _Numbers(half, records)

    class _Count(StatelessSinkPartition):
        def __init__(self, path: str) -> None:
            self._path, self._count = path, 0

        def write_batch(self, items: list) -> None:
            self._count += len(items)

        def close(self) -> None:
            with open(self._path, "w") as out:
                out.write(str(self._count))

    class CountToFiles(DynamicSink):
        def build(self, step_id: str, worker_index: int, worker_count: int) -> _Count:
            return _Count(os.path.join(directory, f"{os.getpid()}-{worker_index}"))

    flow = Dataflow(job)
    numbers = op.input("numbers", flow, Numbers())
    if job == "J1":
        out = op.map("plus_one", op.filter("even", op.map("triple", numbers, triple), is_even), plus_one)
    elif job == "J2":
        keyed = op.key_on("word", op.map("pairs", numbers, word_pair), word_key)

        def running(state: tuple | None, pair: tuple) -> tuple:
            state = pair if state is None else add_counts(state, pair)
            return state, state

        out = op.stateful_map("count", keyed, running)
    else:
        keyed = op.key_on("key", op.map("events", numbers, make_event), lambda event: str(event_key(event)))
        clock = win.EventClock(
            lambda event: EPOCH + timedelta(milliseconds=event[1]),
            wait_for_system_duration=timedelta(milliseconds=DISORDER_MS),
        )
        windower = win.TumblingWindower(length=timedelta(milliseconds=WINDOW_MS), align_to=EPOCH)
        out = win.reduce_window("windows", keyed, clock, windower, add_values).down
    op.output("sink", out, CountToFiles())
    return flow


def _bytewax_process(job: str, records: int, directory: str, addresses: list[str], index: int) -> None:
    from bytewax.testing import cluster_main

    cluster_main(_bytewax_flow(job, records, directory), addresses, index)


def _free_loopback_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def bytewax_run(job: str, parallelism: int) -> int:
    records = RECORDS[job]

    def run(directory: str) -> None:
        if parallelism == 1:
            from bytewax.testing import run_main

            run_main(_bytewax_flow(job, records, directory))
            return
        addresses = [f"127.0.0.1:{port}" for port in _free_loopback_ports(parallelism)]
        context = multiprocessing.get_context("spawn")
        processes = [
            context.Process(target=_bytewax_process, args=(job, records, directory, addresses, index))
            for index in range(parallelism)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(600)
            assert process.exitcode == 0, f"a Bytewax process of {job} exited with {process.exitcode}"

    return _counted(run)


# -- fluvial ----------------------------------------------------------------------------------------------------


def fluvial_run(job: str, parallelism: int) -> int:
    from fluvial.common import Types
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource

    records = RECORDS[job]
    if job == "J3":
        return fluvial_j3(parallelism, records=records)

    def run(directory: str) -> None:
        env = _environment(parallelism)
        numbers = env.from_source(NumberSequenceSource(0, records - 1), source_name="numbers")
        if job == "J1":
            long = Types.LONG()
            out = numbers.map(triple, output_type=long).filter(is_even).map(plus_one, output_type=long)
        else:
            pair = Types.TUPLE([Types.STRING(), Types.LONG()])
            out = numbers.map(word_pair, output_type=pair).key_by(word_key, key_type=Types.STRING()).reduce(add_counts)
        out.add_sink(CountToFile(directory))
        env.execute(job)

    return _counted(run)


# -- the run ----------------------------------------------------------------------------------------------------


def _best(runs: dict[str, Callable[[], int]], repeat: int) -> dict[str, float]:
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main(repeat: int = 2) -> bool:
    if not _bytewax_installed():
        print("bench.peers: skipped, Bytewax is not installed (pip install bytewax to compare with it)")
        return True
    import importlib.metadata

    print(
        f"fluvial beside Bytewax {importlib.metadata.version('bytewax')}; two plain-Python processes do "
        f"{parallel_capacity():.2f}x the work of one now (2.0 on two idle cores)"
    )
    ok = True
    for job, records in RECORDS.items():
        for parallelism in (1, 2):
            best = _best(
                {
                    "bytewax": lambda job=job, parallelism=parallelism: bytewax_run(job, parallelism),
                    "fluvial": lambda job=job, parallelism=parallelism: fluvial_run(job, parallelism),
                },
                repeat,
            )
            ratio = best["bytewax"] / best["fluvial"]
            ok &= ratio >= 2.0
            print(
                f"{job} at parallelism {parallelism}, {records:,} records: fluvial "
                f"{records / best['fluvial']:>12,.0f} records/s, Bytewax {records / best['bytewax']:>12,.0f} "
                f"records/s: {ratio:.2f}x (target >= 2x: {'meets' if ratio >= 2.0 else 'MISSES'})"
            )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
