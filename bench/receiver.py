"""Receiver ingest: records/s through one BlockGenerator, against a plain-Python loop appending to a list.

One producer thread calls `add_data` as fast as it can; the clock runs from the first record to the return of
`stop()`, so every block has been cut and pushed. `ingest(records, listener, **options)` is reusable: pass a
listener that stores blocks (a block handler, with or without the write-ahead log) to measure that path.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Sequence
from typing import Any

from bench.harness import Measurement
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


def ingest(records: Sequence[Any], listener: BlockGeneratorListener, name: str = "BlockGenerator",
           **generator_options: Any) -> Measurement:
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


def main(repeat: int = 3) -> bool:
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
    print(f"  BlockGenerator {fluvial.rate:>14,.0f} records/s  ({fluvial.seconds:.3f} s; target >= "
          f"{TARGET_RATE:,}: {verdict})")
    print(f"  plain Python   {baseline.rate:>14,.0f} records/s  ({baseline.seconds:.3f} s)")
    print(f"  ratio          {fluvial.rate / baseline.rate:>14.3f}x")
    return True


if __name__ == "__main__":
    main()
