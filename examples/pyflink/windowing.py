"""PyFlink's windowing examples in one program: `python windowing.py VARIANT` with VARIANT one of
tumbling_time, sliding_time, session_gap, session_dynamic_gap, tumbling_time_continuous (event-time windows
counting the records of each, printed as `(key,start,end,count)`; the last fires every 5 ms of event time
within 10 ms windows) or tumbling_count (count windows summing, `(key,sum)`)."""

import logging
import sys

from fluvial.common import Time, Types, WatermarkStrategy
from fluvial.common.watermark_strategy import TimestampAssigner
from fluvial.datastream import ProcessWindowFunction, StreamExecutionEnvironment, WindowFunction
from fluvial.datastream.window import (
    ContinuousEventTimeTrigger,
    EventTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

TIMED = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 5), ("hi", 8), ("hi", 9), ("hi", 15)]
SESSIONS = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 8), ("hi", 9), ("hi", 15)]
COUNTED = [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello"), (6, "hello")]


class SecondFieldIsTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return int(value[1])


class GapIsTheTime(SessionWindowTimeGapExtractor):
    def extract(self, element):
        return element[1]


class CountPerWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        return [(key, window.start, window.end, sum(1 for _ in elements))]


class SumPerWindow(WindowFunction):
    def apply(self, key, window, inputs):
        return [(key, sum(value[0] for value in inputs))]


def timed_windows(env, data, assigner, trigger=None):
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondFieldIsTime())
    windows = (
        env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda pair: pair[0], key_type=Types.STRING())
        .window(assigner)
    )
    if trigger is not None:
        windows = windows.trigger(trigger)
    return windows.process(CountPerWindow(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]))


VARIANTS = {
    "tumbling_time": lambda env: timed_windows(env, TIMED, TumblingEventTimeWindows.of(Time.milliseconds(5))),
    "sliding_time": lambda env: timed_windows(
        env, TIMED, SlidingEventTimeWindows.of(Time.milliseconds(5), Time.milliseconds(2))
    ),
    "session_gap": lambda env: timed_windows(env, SESSIONS, EventTimeSessionWindows.with_gap(Time.milliseconds(5))),
    "session_dynamic_gap": lambda env: timed_windows(
        env, SESSIONS, EventTimeSessionWindows.with_dynamic_gap(GapIsTheTime())
    ),
    "tumbling_time_continuous": lambda env: timed_windows(
        env,
        TIMED,
        TumblingEventTimeWindows.of(Time.milliseconds(10)),
        ContinuousEventTimeTrigger.of(Time.milliseconds(5)),
    ),
    "tumbling_count": lambda env: (
        env.from_collection(COUNTED, type_info=Types.TUPLE([Types.INT(), Types.STRING()]))
        .key_by(lambda pair: pair[1], key_type=Types.STRING())
        .count_window(2)
        .apply(SumPerWindow(), Types.TUPLE([Types.STRING(), Types.INT()]))
    ),
}


def main(variant):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    print("Printing result to stdout. Use --output to specify output path.")
    VARIANTS[variant](env).print()
    env.execute()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")  # as PyFlink's example
    main(sys.argv[1] if len(sys.argv) > 1 else "tumbling_time")
