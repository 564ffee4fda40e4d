"""A live job to watch on the dashboard: clicks on a shop's pages, counted per page in 2-second event-time
windows, for about 20 seconds (or SECONDS).

    fluvial run --web examples/live_clicks.py [SECONDS]     # `make demo` runs it so, after the word count

Two source subtasks generate clicks at a steady rate (they run in two TaskManager processes: parallelism 2),
stamped with the time they happen; a keyed window counts each page's clicks, and a window over all pages turns
each 2-second window into one line. Checkpoints every 2 seconds show up on the dashboard's Checkpoints tab.
"""

import sys
import time

from fluvial.common import Duration, Types
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import MapFunction, ProcessAllWindowFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.window import TumblingEventTimeWindows

PAGES = ("/home", "/search", "/product", "/cart", "/checkout")
CLICKS_PER_SECOND = 2_000  # per source subtask
WINDOW = Duration.of_seconds(2)


class Click(MapFunction):
    """Sequence number → (page, when), paced to CLICKS_PER_SECOND: the generator a real click stream replaces."""

    def open(self, runtime_context):
        self.started = time.monotonic()
        self.made = 0

    def map(self, n):
        self.made += 1
        ahead = self.made / CLICKS_PER_SECOND - (time.monotonic() - self.started)
        if ahead > 0.05:
            time.sleep(ahead)
        # a skewed choice of page, as real traffic is: /home most, /checkout least
        spread = (n * 2654435761 % 1000) / 1000  # evenly over [0, 1), in a scrambled order
        page = PAGES[int(len(PAGES) * spread * spread)]
        return page, time.time_ns() // 1_000_000


class Summary(ProcessAllWindowFunction):
    """All pages' counts of one window → one line, busiest page first."""

    def process(self, context, elements):
        window = context.window()
        counts = sorted(elements, key=lambda page_count: -page_count[1])
        when = time.strftime("%H:%M:%S", time.localtime(window.start / 1000))
        yield f"{when} +2s  " + "  ".join(f"{page} {count:>4}" for page, count in counts)


def main(seconds: int) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(2_000)
    clicks = (
        env.from_source(NumberSequenceSource(1, 2 * CLICKS_PER_SECOND * seconds), source_name="clicks")
        .map(Click(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .name("Click")
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(200)).with_timestamp_assigner(
                lambda click, _: click[1]
            )
        )
    )
    per_page = (
        clicks.map(lambda click: (click[0], 1))
        .name("Page")
        .key_by(lambda page_one: page_one[0])
        .window(TumblingEventTimeWindows.of(WINDOW))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .name("Clicks per page")
    )
    per_page.window_all(TumblingEventTimeWindows.of(WINDOW)).process(Summary()).name("Summary").print().set_parallelism(
        1
    )
    env.execute("live clicks")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
