"""Every core: J1, J2 and J3 at parallelism 2 in TaskManager processes against parallelism 1 (one process), in
the same run; one TCP channel between two processes against a LocalChannel; the start-up of an empty job in
both modes.

Goals on a 2-core machine (issue 9): J1 >= 1.6x (its source is parallel), J2 and J3 >= 1.2x (J2's source,
from_collection, runs at parallelism 1 as in PyFlink, so it bounds the job). J1 is judged on 20M records: at
bench.spine's 2M the job lasts 0.15 s, and starting the TaskManager processes (the empty-job figure below)
takes most of that; the 2M figure is printed too. J2 and J3 are bounded by their one source subtask: in a
TaskManager process it unpickles each element, partitions it by key and pickles half of them for the other
process, which costs more per record than the whole job at parallelism 1, and it shares its process (its slot)
with the first keyed subtask.

Counts come back through files each sink subtask writes when it closes, so the jobs run as a user's would,
with nothing collected to the client on the hot path.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time

from bench.harness import Measurement, best_of, run_fresh_interpreter
from bench.spine import J1_RECORDS, J2_RECORDS, add_counts, is_even, plus_one, to_pair, triple, word_key, zipf_words
from fluvial.common import Configuration
from fluvial.datastream import SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource


class CountToFile(SinkFunction):
    """Counts its records; on close writes to `<directory>/<subtask>` the count, the CPU seconds its process has
    used and its pid. In a TaskManager process (forked for the job, so its CPU clock starts at zero) that is the
    whole work of the process for the job: what a speed-up is bounded by, whatever else shares the machine."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def open(self, runtime_context: object) -> None:
        self.count = 0
        self.subtask = runtime_context.get_index_of_this_subtask()

    def invoke(self, value: object, context: object) -> None:
        self.count += 1

    def invoke_batch(self, values: list, context: object) -> None:
        self.count += len(values)

    def close(self) -> None:
        with open(os.path.join(self.directory, str(self.subtask)), "w") as out:
            out.write(f"{self.count} {time.process_time()} {os.getpid()}")


def _environment(parallelism: int, target: str = "local") -> StreamExecutionEnvironment:
    """Parallelism 1 in threads, above in processes; on Ray (`target` ray), TaskManager actors."""
    if target == "ray":
        configuration = Configuration().set_string("execution.target", "ray")
    else:
        configuration = Configuration().set_string("local.taskmanager.mode", "process" if parallelism > 1 else "thread")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    return env


SINK_PROCESS_CPU: dict[int, float] = {}  # the last `_counted` job's sink processes: pid -> CPU seconds at close


def _counted(run: object) -> int:
    directory = tempfile.mkdtemp(prefix="fluvial-bench-")
    run(directory)
    SINK_PROCESS_CPU.clear()
    total = 0
    for name in os.listdir(directory):
        with open(os.path.join(directory, name)) as counted:
            count, *cpu_and_pid = counted.read().split()
        total += int(count)
        if cpu_and_pid:
            pid = int(cpu_and_pid[1])
            SINK_PROCESS_CPU[pid] = max(SINK_PROCESS_CPU.get(pid, 0.0), float(cpu_and_pid[0]))
    return total


J1_SCALING_RECORDS = 10 * J1_RECORDS  # a job of about 1.5 s at parallelism 1: what it does, not how it starts


def j1(parallelism: int, target: str = "local", records: int = J1_RECORDS) -> int:
    def run(directory: str) -> None:
        env = _environment(parallelism, target)
        env.from_source(NumberSequenceSource(1, records), source_name="numbers").map(triple).filter(is_even).map(
            plus_one
        ).add_sink(CountToFile(directory))
        env.execute("J1")

    count = _counted(run)
    assert count == records // 2, count
    return count


def j2(parallelism: int, pairs: list, target: str = "local") -> int:
    def run(directory: str) -> None:
        env = _environment(parallelism, target)
        env.from_collection(pairs).key_by(word_key).reduce(add_counts).add_sink(CountToFile(directory))
        env.execute("J2")

    count = _counted(run)
    assert count == len(pairs), count
    return count


def j3(parallelism: int) -> None:
    """bench.event_time's J3 job (its default `auto` mode runs parallelism 2 in processes)."""
    from bench.event_time import EVENTS, run_fluvial

    assert run_fluvial(EVENTS, parallelism)


def scaling(
    title: str, records: int, one: object, two: object, target: float | None, repeat: int = 3, two_is: str = "processes"
) -> bool:
    """Best of `repeat`, interleaved: parallelism 1 (thread) against 2 (processes, or what `two_is` says); with
    no `target`, the speed-up is reported, not judged.

    Beside the wall clock, the CPU each side used (best of `repeat`): at parallelism 1 this process's, during the
    job; at parallelism 2 this process's (building and submitting the job) plus the busiest TaskManager
    process's, as its sink saw it at close (jobs whose sink is CountToFile). Their ratio is about the speed-up
    two idle cores would give. On a shared machine the wall-clock ratio
    measures the scheduler as much as the job: with one other runnable thread, parallelism 1 still gets a whole
    core and parallelism 2 two thirds of each; with many, each runnable thread gets an equal share, so two
    processes get twice the CPU of one and the ratio drifts towards 2 whatever the job does."""
    best = {1: float("inf"), 2: float("inf")}
    cpu = {1: float("inf"), 2: float("inf")}
    for _ in range(repeat):
        for parallelism, run in ((1, one), (2, two)):
            SINK_PROCESS_CPU.clear()
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            best[parallelism] = min(best[parallelism], time.perf_counter() - start)
            used = time.process_time() - start_cpu
            if parallelism == 2:  # the client builds and submits the job first: its CPU counts too
                used += max(SINK_PROCESS_CPU.values(), default=float("nan"))
            cpu[parallelism] = min(cpu[parallelism], used)
    speedup = best[1] / best[2]
    print(title)
    labels = {1: "parallelism 1 (threads)", 2: f"parallelism 2 ({two_is})"}
    width = max(len(label) for label in labels.values())
    for parallelism, label in labels.items():
        print(f"  {label:<{width}} {records / best[parallelism]:>14,.0f} records/s  ({best[parallelism]:.3f} s)")
    cpu_speedup = None
    if cpu[2] == cpu[2] and two_is == "processes":  # not NaN: the job's sink reported its processes' CPU
        cpu_speedup = cpu[1] / cpu[2]
        verdict = (
            "" if target is None else f"   (target >= {target}x: {'meets' if cpu_speedup >= target else 'MISSES'})"
        )
        print(
            f"  CPU: {cpu[1]:.2f} s at parallelism 1, {cpu[2]:.2f} s at 2 (client + busiest TaskManager): "
            f"{cpu_speedup:.2f}x on two idle cores{verdict}"
        )
    if target is None:
        print(f"  speed-up     {speedup:>14.2f}x")
        return True
    print(f"  speed-up     {speedup:>14.2f}x   (target >= {target}x: {'meets' if speedup >= target else 'MISSES'})")
    # a job meets its target when both figures do: the wall clock alone drifts towards 2x on a crowded machine
    return speedup >= target and (cpu_speedup is None or cpu_speedup >= target)


# -- one channel: TCP between two processes against LocalChannel in one --------------------------------------

CHANNEL_BATCHES = 3_000
BATCH = list(range(1024))


def _tcp_consumer(secret: bytes, address_out: object, done: object) -> None:
    from fluvial.runtime.channels import ChannelId
    from fluvial.runtime.network.data_plane import DataPlane
    from fluvial.runtime.records import EndOfInput

    plane = DataPlane(secret, "bench-consumer")
    address_out.send(plane.address)
    channel = plane.input_channel(ChannelId("bench", 0, 0))
    records = 0
    while True:
        item = channel.poll()
        if item is None:
            time.sleep(0)
            continue
        if isinstance(item, EndOfInput):
            break
        records += len(item.values)
    done.send(records)


def tcp_channel() -> Measurement:
    from fluvial.runtime.channels import ChannelId
    from fluvial.runtime.network.auth import new_secret
    from fluvial.runtime.network.data_plane import DataPlane
    from fluvial.runtime.records import END_OF_INPUT, RecordBatch

    secret = new_secret()
    context = multiprocessing.get_context("spawn")
    address_r, address_w = context.Pipe(duplex=False)
    done_r, done_w = context.Pipe(duplex=False)
    consumer = context.Process(target=_tcp_consumer, args=(secret, address_w, done_w), daemon=True)
    consumer.start()
    producer = DataPlane(secret, "bench-producer")
    channel = producer.output_channel(ChannelId("bench", 0, 0), address_r.recv())
    start = time.perf_counter()
    for _ in range(CHANNEL_BATCHES):
        while not channel.writable():
            time.sleep(0)
        channel.push(RecordBatch(BATCH))
    channel.push(END_OF_INPUT)
    records = done_r.recv()
    seconds = time.perf_counter() - start
    consumer.join(5)
    producer.close()
    assert records == CHANNEL_BATCHES * len(BATCH)
    return Measurement("TCP channel", records, seconds)


def local_channel() -> Measurement:
    from fluvial.runtime.channels import LocalChannel
    from fluvial.runtime.records import RecordBatch

    channel = LocalChannel()

    def run() -> None:
        records = 0
        for _ in range(CHANNEL_BATCHES):
            channel.push(RecordBatch(BATCH))
            records += len(channel.poll().values)
        assert records == CHANNEL_BATCHES * len(BATCH)

    return best_of("LocalChannel", CHANNEL_BATCHES * len(BATCH), run, repeat=3)


# -- start-up ---------------------------------------------------------------------------------------------------

EMPTY_JOB = """
import time
start = time.perf_counter()
from fluvial.common import Configuration
from fluvial.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment(
    Configuration().set_string("local.taskmanager.mode", "{mode}"))
env.set_parallelism({parallelism})
env.from_collection([1]).map(lambda x: x).add_sink(lambda v: None)
env.execute()
print(time.perf_counter() - start)
"""


def empty_job_seconds(mode: str, parallelism: int, repeat: int = 5) -> float:
    """Best wall time of an empty job in a fresh interpreter, imports and (process mode) process start included."""
    code = EMPTY_JOB.format(mode=mode, parallelism=parallelism)
    run_fresh_interpreter(code)  # the first start writes the bytecode cache, as a user's first run does
    return min(float(run_fresh_interpreter(code).stdout.strip().splitlines()[-1]) for _ in range(repeat))


# -- what this machine gives two processes right now ----------------------------------------------------------

CALIBRATION_LOOP = 10_000_000


def _busy_loop(_: object = None) -> float:
    start = time.perf_counter()
    total = 0
    for i in range(CALIBRATION_LOOP):
        total += i
    return time.perf_counter() - start


def parallel_capacity() -> float:
    """How much faster two plain-Python processes finish the same loop than one, now: 2.0 on two idle cores,
    less when other work shares them. The speed-ups above are bounded by it, so it is printed beside them."""
    one = min(_busy_loop() for _ in range(2))
    context = multiprocessing.get_context("fork")
    with context.Pool(2) as pool:
        start = time.perf_counter()
        pool.map(_busy_loop, [0, 1])
        both = time.perf_counter() - start
    return 2 * one / both


def main() -> bool:
    capacity = parallel_capacity()
    print(
        f"This machine now: two plain-Python processes do {capacity:.2f}x the work of one "
        "(the bound of every speed-up below; 2.0 on two idle cores)"
    )
    ok = scaling(
        f"J1 at parallelism 2 in processes vs 1: {J1_SCALING_RECORDS:,} ints -> map -> filter -> map -> count",
        J1_SCALING_RECORDS,
        lambda: j1(1, records=J1_SCALING_RECORDS),
        lambda: j1(2, records=J1_SCALING_RECORDS),
        target=1.6,
    )
    scaling(
        f"J1 as bench.spine runs it: {J1_RECORDS:,} ints (a job of 0.15 s, most of it the start of the "
        "TaskManager processes)",
        J1_RECORDS,
        lambda: j1(1),
        lambda: j1(2),
        target=None,
    )
    pairs = [to_pair(word) for word in zipf_words(J2_RECORDS)]
    ok &= scaling(
        f"J2 at parallelism 2 in processes vs 1: {J2_RECORDS:,} Zipf words -> keyed running count",
        J2_RECORDS,
        lambda: j2(1, pairs),
        lambda: j2(2, pairs),
        target=1.2,
    )
    from bench.event_time import EVENTS

    ok &= scaling(
        f"J3 at parallelism 2 in processes vs 1: {EVENTS:,} events -> 60 s tumbling windows",
        EVENTS,
        lambda: j3(1),
        lambda: j3(2),
        target=1.2,
    )
    tcp, local = tcp_channel(), local_channel()
    print("One channel, 1024-record buffers")
    print(f"  LocalChannel (one process: buffers handed over, never copied) {local.rate:>16,.0f} records/s")
    print(
        f"  TCP channel (two processes: pickled, framed, credited)     {tcp.rate:>16,.0f} records/s "
        f"({tcp.rate / local.rate:.4f}x of local)"
    )
    thread_start = empty_job_seconds("thread", 1)
    process_start = empty_job_seconds("process", 2)
    print("Empty job, fresh interpreter, imports included")
    print(f"  thread mode   {thread_start:.3f} s   (target <= 0.15 s: {'meets' if thread_start <= 0.15 else 'MISSES'})")
    print(f"  process mode  {process_start:.3f} s   (target < 0.6 s: {'meets' if process_start < 0.6 else 'MISSES'})")
    return ok and thread_start <= 0.15 and process_start < 0.6


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
