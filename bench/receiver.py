"""Receiver ingest: records/s through one BlockGenerator, against a plain-Python loop appending to a list.

One producer thread calls `add_data` as fast as it can; the clock runs from the first record to the return of
`stop()`, so every block has been cut and pushed. `ingest(records, listener, **options)` is reusable: pass a
listener that stores blocks (a block handler, with or without the write-ahead log) to measure that path.

Job ingest (issue 5's benchmark): a Receiver storing records as fast as it can into a job whose counting sink
counts them, with the write-ahead log off and on. Two ways to store: `store(list)` of 1,000-record batches
(reliable: returns once the block is stored, in the WAL when on) and `store(record)` one by one (through the
BlockGenerator). "stored" runs from the first store to the return of the last one; "through the job" from the
first store to the job's end, when the sink has counted every record. Targets: WAL off >= 500,000 records/s
stored through one receiver, WAL on >= 0.5x WAL off.
"""

from __future__ import annotations

import gc
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from bench.harness import Measurement
from bench.spine import CountingSink
from fluvial.common import Configuration
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.receiver import Receiver
from fluvial.receiver.block_generator import BlockGenerator, BlockGeneratorListener
from fluvial.receiver.blocks import StreamBlockId

RECORDS = 2_000_000
TARGET_RATE = 500_000  # records/s through one BlockGenerator


class CountingListener(BlockGeneratorListener):
    """Counts pushed records and blocks; fails loudly on errors so a broken run cannot look fast."""

    def __init__(self) -> None:
        self.records = 0
        self.blocks = 0

    def on_add_data(self, data: Any, metadata: Any) -> None:
        pass

    def on_generate_block(self, block_id: StreamBlockId) -> None:
        pass

    def on_push_block(self, block_id: StreamBlockId, records: list[Any]) -> None:
        self.records += len(records)
        self.blocks += 1

    def on_error(self, message: str, error: BaseException) -> None:
        raise AssertionError(message) from error


def ingest(
    records: Sequence[Any], listener: BlockGeneratorListener, name: str = "BlockGenerator", **generator_options: Any
) -> Measurement:
    """Adds `records` from one producer thread to a fresh BlockGenerator, stops it, and times both."""
    generator = BlockGenerator(listener, 0, **generator_options)
    generator.start()
    producer = threading.Thread(target=_produce, args=(generator, records), name="bench-producer")
    gc.collect()
    start = time.perf_counter()
    producer.start()
    producer.join()
    generator.stop()
    return Measurement(name, len(records), time.perf_counter() - start)


def _produce(generator: BlockGenerator, records: Sequence[Any]) -> None:
    add_data = generator.add_data
    for record in records:
        add_data(record)


def plain_loop(records: Sequence[Any]) -> Measurement:
    gc.collect()
    start = time.perf_counter()
    out: list[Any] = []
    for record in records:
        out.append(record)
    seconds = time.perf_counter() - start
    assert len(out) == len(records)
    return Measurement("plain Python", len(records), seconds)


def _best(measurements: list[Measurement]) -> Measurement:
    return min(measurements, key=lambda m: m.seconds)


def generator_main(repeat: int = 3) -> bool:
    records = list(range(RECORDS))
    runs = []
    for _ in range(repeat):
        listener = CountingListener()
        runs.append(ingest(records, listener))
        assert listener.records == RECORDS, f"pushed {listener.records} of {RECORDS} records"
    fluvial = _best(runs)
    baseline = _best([plain_loop(records) for _ in range(repeat)])
    verdict = "meets" if fluvial.rate >= TARGET_RATE else "MISSES"
    print(f"Receiver ingest: {RECORDS:,} records, one producer thread, add_data, 200 ms blocks")
    print(
        f"  BlockGenerator {fluvial.rate:>14,.0f} records/s  ({fluvial.seconds:.3f} s; target >= "
        f"{TARGET_RATE:,}: {verdict})"
    )
    print(f"  plain Python   {baseline.rate:>14,.0f} records/s  ({baseline.seconds:.3f} s)")
    print(f"  ratio          {fluvial.rate / baseline.rate:>14.3f}x")
    return True


# -- job ingest: a receiver storing as fast as it can, WAL off and on -----------------------------------------

JOB_RECORDS = 2_000_000
BATCH = 1_000
WAL_RATIO_TARGET = 0.5


class FloodReceiver(Receiver):
    """Stores pre-built records as fast as it can, then stops. `batches`: store(list) per batch; otherwise
    store(record) per record. Times the first store and the return of the last one."""

    def __init__(self, batches: list[list[int]], one_by_one: bool) -> None:
        super().__init__()
        self.batches = batches
        self.one_by_one = one_by_one
        self.first_store = 0.0
        self.last_store = 0.0

    def on_start(self) -> None:
        store = self.store
        self.first_store = time.perf_counter()
        if self.one_by_one:
            for batch in self.batches:
                for record in batch:
                    store(record)
        else:
            for batch in self.batches:
                store(batch)
        self.last_store = time.perf_counter()
        self.stop("flooded")

    def on_stop(self) -> None:
        pass


def job_ingest(
    batches: list[list[int]], one_by_one: bool, wal_directory: str | None
) -> tuple[Measurement, Measurement]:
    """(stored, through the job) for one run: a FloodReceiver → counting sink, parallelism 1."""
    conf = Configuration()
    if wal_directory is not None:
        conf.set_string("receiver.write-ahead-log.enable", "true")
        conf.set_string("state.checkpoints.dir", f"file://{wal_directory}")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    receiver = FloodReceiver(batches, one_by_one)
    sink = CountingSink()
    env.add_receiver(receiver, "flood").add_sink(sink)
    gc.collect()
    env.execute("receiver ingest")
    end = time.perf_counter()
    records = sum(len(batch) for batch in batches)
    assert sink.count == records, f"the sink counted {sink.count} of {records} records"
    stored = Measurement("stored", records, receiver.last_store - receiver.first_store)
    through = Measurement("through the job", records, end - receiver.first_store)
    return stored, through


def _best_job_ingest(
    batches: list[list[int]], one_by_one: bool, wal: bool, repeat: int
) -> tuple[Measurement, Measurement]:
    runs = []
    for _ in range(repeat):
        if wal:
            with tempfile.TemporaryDirectory(prefix="fluvial-receiver-bench-") as directory:
                runs.append(job_ingest(batches, one_by_one, directory))
        else:
            runs.append(job_ingest(batches, one_by_one, None))
    return _best([stored for stored, _ in runs]), _best([through for _, through in runs])


def job_main(repeat: int = 3) -> bool:
    records = list(range(JOB_RECORDS))
    batches = [records[i : i + BATCH] for i in range(0, JOB_RECORDS, BATCH)]
    ok = True
    print(
        f"Receiver job ingest: {JOB_RECORDS:,} records, one receiver -> counting sink, parallelism 1, best of {repeat}"
    )
    for label, one_by_one in ((f"store(list) of {BATCH:,}", False), ("store(record)", True)):
        off_stored, off_through = _best_job_ingest(batches, one_by_one, wal=False, repeat=repeat)
        on_stored, on_through = _best_job_ingest(batches, one_by_one, wal=True, repeat=repeat)
        print(f"  {label}")
        for what, off, on in (("stored", off_stored, on_stored), ("through the job", off_through, on_through)):
            ratio = on.rate / off.rate
            print(
                f"    {what:<16} WAL off {off.rate:>12,.0f} records/s   WAL on {on.rate:>12,.0f} records/s   "
                f"on/off {ratio:.2f}x"
            )
        # the targets, on the end-to-end figures: every record stored and counted by the sink
        ratio = on_through.rate / off_through.rate
        meets_rate = off_through.rate >= TARGET_RATE
        meets_ratio = ratio >= WAL_RATIO_TARGET
        print(
            f"    targets: WAL off >= {TARGET_RATE:,} records/s: {'meets' if meets_rate else 'MISSES'}; "
            f"WAL on >= {WAL_RATIO_TARGET}x WAL off: {'meets' if meets_ratio else 'MISSES'}"
        )
        ok &= meets_rate and meets_ratio
    return ok


def main(repeat: int = 3) -> bool:
    """The BlockGenerator ingest and the job ingest with the WAL off and on; True when the targets are met."""
    generator_main(repeat)
    return job_main(repeat)


if __name__ == "__main__":
    main()
