"""J3: event-time tumbling windows. 1,000,000 events, 1,000 keys, timestamps ~1 ms apart with up to 5 s of
disorder, bounded out-of-orderness 5 s, 60 s tumbling event-time windows, sum per key and window.

Events are generated lazily from a sequence (so memory measures open windows, not the input). The plain-Python
loop calls the same functions once per record and fires windows as its watermark passes them. Peak RSS is
measured in fresh processes for 1M and 4M events: it must not grow 4x.
"""

from __future__ import annotations

import subprocess
import sys

from bench.harness import compare, report

EVENTS = 1_000_000
KEYS = 1_000
DISORDER_MS = 5_000
WINDOW_MS = 60_000


def make_event(i: int) -> tuple:
    """(key, timestamp, value): timestamps ~1 ms apart, each up to 5 s early (a fixed pseudo-random pattern)."""
    return (i % KEYS, i - (i * 2654435761) % DISORDER_MS, 1)


def event_key(event: tuple) -> int:
    return event[0]


def event_timestamp(event: tuple, record_timestamp: object) -> int:
    return event[1]


def add_values(a: tuple, b: tuple) -> tuple:
    return (a[0], a[1], a[2] + b[2])


def run_fluvial(events: int = EVENTS, parallelism: int = 1) -> dict:
    from fluvial.common import Duration
    from fluvial.common.watermark_strategy import WatermarkStrategy
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource
    from fluvial.datastream.window import TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(DISORDER_MS)).with_timestamp_assigner(
        event_timestamp
    )
    results: dict = {}
    windows = (
        env.from_source(NumberSequenceSource(0, events - 1), source_name="events")
        .map(make_event)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(event_key)
        .window(TumblingEventTimeWindows.of(Duration.of_millis(WINDOW_MS)))
        .reduce(add_values)
    )
    with windows.execute_and_collect() as collected:
        for key, timestamp, total in collected:
            start = timestamp - timestamp % WINDOW_MS
            results[(key, start)] = results.get((key, start), 0) + total
    return results


def run_loop(events: int = EVENTS) -> dict:
    """The same windows in plain Python: per record the same functions, a watermark, firing as it passes."""
    open_windows: dict[int, dict] = {}  # window start -> key -> running aggregate
    fired: dict = {}
    max_timestamp = -(2**63)
    watermark = -(2**63)
    next_end = None  # max timestamp of the oldest open window
    for i in range(events):
        event = make_event(i)
        timestamp = event_timestamp(event, None)
        key = event_key(event)
        start = timestamp - timestamp % WINDOW_MS
        if start + WINDOW_MS - 1 <= watermark:
            continue  # late
        pane = open_windows.get(start)
        if pane is None:
            pane = open_windows[start] = {}
            if next_end is None or start + WINDOW_MS - 1 < next_end:
                next_end = start + WINDOW_MS - 1
        previous = pane.get(key)
        pane[key] = event if previous is None else add_values(previous, event)
        if timestamp > max_timestamp:
            max_timestamp = timestamp
            watermark = max_timestamp - DISORDER_MS - 1
            while next_end is not None and next_end <= watermark:
                for k, aggregate in open_windows.pop(next_end + 1 - WINDOW_MS).items():
                    fired[(k, next_end + 1 - WINDOW_MS)] = aggregate[2]
                next_end = min(open_windows) + WINDOW_MS - 1 if open_windows else None
    for start, pane in open_windows.items():
        for k, aggregate in pane.items():
            fired[(k, start)] = aggregate[2]
    return fired


def peak_rss_mb(events: int) -> float:
    code = (
        f"import resource; from bench.event_time import run_fluvial; run_fluvial({events}); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def main() -> bool:
    expected = run_loop()
    ok = report(
        "J3: 1M events, 1000 keys, 5 s disorder, 60 s tumbling event-time windows, sum (parallelism 1)",
        *compare(EVENTS, lambda: run_fluvial(EVENTS, 1), run_loop, repeat=3),
        target=0.35,
    )
    for parallelism in (1, 2):
        same = run_fluvial(EVENTS, parallelism) == expected
        print(f"  parallelism {parallelism}: windows equal the loop's: {same}")
        ok &= same
    small, large = peak_rss_mb(EVENTS), peak_rss_mb(4 * EVENTS)
    print(f"  peak RSS: {small:.0f} MB for 1M events, {large:.0f} MB for 4M ({large / small:.2f}x; must stay < 4x)")
    return ok and large / small < 4
