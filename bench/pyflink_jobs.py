"""J1, J2 and J3 as a PyFlink user writes them (issue 10's speed section): the sinks and functions are the ones
PyFlink offers (`print()`, FlatMapFunction, ProcessWindowFunction), not fluvial's batch entry points. Each is
measured against the one-call-per-operator plain-Python loop in the same run (interleaved, best of N).

J1: from_source(NumberSequenceSource) -> map(x*3) -> filter(even) -> map(x+1) -> flat_map(a FlatMapFunction
    that counts and returns []) -> print(), exactly as the issue writes it.
J2: 1M Zipf words -> map((w, 1)) -> key_by -> reduce(running count) -> the same counting flat_map -> print().
J3: bench.event_time's 1M events (1,000 keys, 5 s disorder) -> 60 s tumbling event-time windows -> reduce with a
    ProcessWindowFunction, late data to a side output -> counting flat_map -> print().
All at parallelism 1, so the ratio measures per-record cost, not parallelism.

Each job runs twice: as PyFlink's documentation writes it, with declared types (`output_type=` on map, flat_map
and reduce, `key_type=` on key_by, `type_info=` on from_collection), and without them. Goals (issue 17): the
ratios above, typed or not, and the typed form within 5% of the untyped one.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.event_time import DISORDER_MS as J3_DISORDER_MS
from bench.event_time import WINDOW_MS as J3_WINDOW_MS
from bench.event_time import add_values, event_key, make_event
from bench.harness import compare_many
from bench.spine import add_counts, is_even, plus_one, to_pair, triple, word_key, zipf_words

J1_RECORDS = 2_000_000
J2_RECORDS = 1_000_000
J3_EVENTS = 1_000_000


def _flat_map_function_class():
    from fluvial.datastream import FlatMapFunction

    class CountAndDrop(FlatMapFunction):
        """The tail of every job: counts what reaches it and emits nothing, so `print()` prints nothing."""

        def __init__(self) -> None:
            self.count = 0

        def flat_map(self, value):
            self.count += 1
            return []

    return CountAndDrop


def _types():
    """The declared types of the typed forms: J1 LONG; J2 TUPLE(STRING, LONG) (KeyedStream.reduce keeps its
    input type, as in PyFlink); J3's events TUPLE(INT, LONG, INT)."""
    from fluvial.common import Types

    return (
        Types.LONG(),
        Types.TUPLE([Types.STRING(), Types.LONG()]),
        Types.TUPLE([Types.INT(), Types.LONG(), Types.INT()]),
    )


def _typed(typed: bool, declared: object) -> dict:
    return {"output_type": declared} if typed else {}


def _env():
    from fluvial.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


# -- J1 ----------------------------------------------------------------------------------------------------------


def run_j1_fluvial(records: int = J1_RECORDS, typed: bool = False) -> int:
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource

    env = _env()
    counter = _flat_map_function_class()()
    long = _typed(typed, _types()[0])
    env.from_source(NumberSequenceSource(1, records), source_name="numbers").map(triple, **long).filter(is_even).map(
        plus_one, **long
    ).flat_map(counter, **long).print()
    env.execute("J1 (PyFlink style)")
    assert counter.count == records // 2, counter.count
    return counter.count


def run_j1_loop(records: int = J1_RECORDS) -> int:
    counter = _flat_map_function_class()()
    flat_map = counter.flat_map
    for x in range(1, records + 1):
        y = triple(x)
        if is_even(y):
            for item in flat_map(plus_one(y)):
                print(item)
    return counter.count


# -- J2 ----------------------------------------------------------------------------------------------------------


def run_j2_fluvial(words: list[str], typed: bool = False) -> int:
    from fluvial.common import Types

    env = _env()
    counter = _flat_map_function_class()()
    pair = _typed(typed, _types()[1])
    source = env.from_collection(words, type_info=Types.STRING()) if typed else env.from_collection(words)
    source.map(to_pair, **pair).key_by(word_key, key_type=Types.STRING() if typed else None).reduce(
        add_counts
    ).flat_map(counter, **pair).print()
    env.execute("J2 (PyFlink style)")
    assert counter.count == len(words), counter.count
    return counter.count


def run_j2_loop(words: list[str]) -> int:
    counter = _flat_map_function_class()()
    flat_map = counter.flat_map
    counts: dict = {}
    for word in words:
        pair = to_pair(word)
        key = word_key(pair)
        previous = counts.get(key)
        pair = pair if previous is None else add_counts(previous, pair)
        counts[key] = pair
        for item in flat_map(pair):
            print(item)
    return counter.count


# -- J3 ----------------------------------------------------------------------------------------------------------


def _window_function_class():
    from fluvial.datastream import ProcessWindowFunction

    class Total(ProcessWindowFunction):
        def process(self, key, context, elements):
            for element in elements:
                yield (key, context.window().start, element[2])

    return Total


class _EventTimestamps:
    def extract_timestamp(self, value: tuple, record_timestamp: int) -> int:
        return value[1]


def run_j3_fluvial(events: int = J3_EVENTS, typed: bool = False) -> int:
    from fluvial.common import Duration, Types, WatermarkStrategy
    from fluvial.datastream import OutputTag
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource
    from fluvial.datastream.window import TumblingEventTimeWindows

    env = _env()
    counter = _flat_map_function_class()()
    late = OutputTag("late")
    event = _typed(typed, _types()[2])
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(J3_DISORDER_MS)
    ).with_timestamp_assigner(_EventTimestamps())
    windows = (
        env.from_source(NumberSequenceSource(0, events - 1), source_name="events")
        .map(make_event, **event)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(event_key, key_type=Types.INT() if typed else None)
        .window(TumblingEventTimeWindows.of(Duration.of_millis(J3_WINDOW_MS)))
        .side_output_late_data(late)
        .reduce(add_values, window_function=_window_function_class()(), **event)
    )
    windows.flat_map(counter, **event).print()
    windows.get_side_output(late).print()
    env.execute("J3 (PyFlink style)")
    return counter.count


def run_j3_loop(events: int = J3_EVENTS) -> int:
    """The same windows in plain Python, one call per operator and record: the map, the timestamp assigner and
    watermark generator, the key selector, the reduce; a window fires (its ProcessWindowFunction runs) when the
    watermark passes its end; late records go to their own list."""
    counter = _flat_map_function_class()()
    flat_map = counter.flat_map
    window_function = _window_function_class()()
    assigner = _EventTimestamps()
    open_windows: dict[int, dict] = {}  # window start -> key -> running aggregate
    late: list = []
    max_timestamp = -(2**63)
    watermark = -(2**63)
    next_end = None  # max timestamp of the oldest open window

    def fire(start: int) -> None:
        context = _LoopWindowContext(start)
        for key, aggregate in open_windows.pop(start).items():
            for result in window_function.process(key, context, [aggregate]):
                for item in flat_map(result):
                    print(item)

    for i in range(events):
        event = make_event(i)
        timestamp = assigner.extract_timestamp(event, 0)
        key = event_key(event)
        start = timestamp - timestamp % J3_WINDOW_MS
        if start + J3_WINDOW_MS - 1 <= watermark:
            late.append(event)
            continue
        pane = open_windows.get(start)
        if pane is None:
            pane = open_windows[start] = {}
            if next_end is None or start + J3_WINDOW_MS - 1 < next_end:
                next_end = start + J3_WINDOW_MS - 1
        previous = pane.get(key)
        pane[key] = event if previous is None else add_values(previous, event)
        if timestamp > max_timestamp:
            max_timestamp = timestamp
            watermark = max_timestamp - J3_DISORDER_MS - 1
            while next_end is not None and next_end <= watermark:
                fire(next_end + 1 - J3_WINDOW_MS)
                next_end = min(open_windows) + J3_WINDOW_MS - 1 if open_windows else None
    for start in sorted(open_windows):
        fire(start)
    return counter.count


class _LoopWindowContext:
    __slots__ = ("_window",)

    def __init__(self, start: int) -> None:
        from fluvial.datastream.window import TimeWindow

        self._window = TimeWindow(start, start + J3_WINDOW_MS)

    def window(self):
        return self._window


def _report_typed(
    title: str,
    records: int,
    typed: Callable[[], object],
    untyped: Callable[[], object],
    loop: Callable[[], object],
    target: float,
    repeat: int,
) -> bool:
    """Typed, untyped and the loop interleaved in one run: each form against the loop, and typed against untyped
    (goal: within 5%)."""
    best = compare_many(records, {"typed": typed, "untyped": untyped, "loop": loop}, repeat=repeat)
    print(title)
    for name in ("typed", "untyped", "loop"):
        print(f"  {name:<12} {best[name].rate:>14,.0f} records/s  ({best[name].seconds:.3f} s)")
    ok = True
    for name in ("typed", "untyped"):
        ratio = best[name].rate / best["loop"].rate
        ok &= ratio >= target
        verdict = "meets" if ratio >= target else "MISSES"
        print(f"  {name + ' / loop':<16} {ratio:>10.2f}x   (target >= {target}x: {verdict})")
    typed_ratio = best["typed"].rate / best["untyped"].rate
    ok &= typed_ratio >= 0.95
    print(
        f"  {'typed / untyped':<16} {typed_ratio:>10.2f}x   (target >= 0.95x: "
        f"{'meets' if typed_ratio >= 0.95 else 'MISSES'})"
    )
    return ok


def main() -> bool:
    ok = _report_typed(
        "J1 (PyFlink style): 2M ints -> map -> filter -> map -> flat_map(count, []) -> print (parallelism 1)",
        J1_RECORDS,
        lambda: run_j1_fluvial(typed=True),
        run_j1_fluvial,
        run_j1_loop,
        target=1.0,
        repeat=5,
    )
    words = zipf_words(J2_RECORDS)
    ok &= _report_typed(
        "J2 (PyFlink style): 1M Zipf words -> map -> key_by -> reduce -> flat_map(count, []) -> print",
        J2_RECORDS,
        lambda: run_j2_fluvial(words, typed=True),
        lambda: run_j2_fluvial(words),
        lambda: run_j2_loop(words),
        target=0.8,
        repeat=5,
    )
    expected = run_j3_loop()
    assert run_j3_fluvial() == expected == run_j3_fluvial(typed=True), "J3's windows differ from the loop's"
    ok &= _report_typed(
        "J3 (PyFlink style): 1M events -> 60 s tumbling windows, reduce + ProcessWindowFunction, late side output",
        J3_EVENTS,
        lambda: run_j3_fluvial(typed=True),
        run_j3_fluvial,
        run_j3_loop,
        target=0.5,
        repeat=3,
    )
    return ok


if __name__ == "__main__":
    import sys

    sys.exit(0 if main() else 1)
