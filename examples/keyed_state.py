"""Keyed state: a KeyedProcessFunction that counts readings per river gauge with a ValueState.

    python examples/keyed_state.py [READINGS]        # or: fluvial run examples/keyed_state.py [READINGS]

Numbers 1..READINGS (default 1000) stand for readings; reading n comes from gauge n % 5. The stream is keyed by
gauge, so every reading of one gauge reaches the same subtask, where `self.count` — one ValueState handle —
reads and writes the count of the *current* key only. The function emits (gauge, count so far) per reading;
the client keeps the last count of each gauge and prints them.
"""

import sys

from fluvial.common import Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.functions import KeyedProcessFunction, RuntimeContext
from fluvial.datastream.state import ValueStateDescriptor

GAUGES = ("mill-weir", "old-bridge", "ferry", "dam", "delta")


class CountPerGauge(KeyedProcessFunction):
    """Counts records per key. State handles are created in `open`, once per subtask; each call of
    `process_element` sees the state of the record's key."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield ctx.get_current_key(), count


def main(readings: int) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    counts = (
        env.from_source(NumberSequenceSource(1, readings), source_name="readings")
        .map(lambda n: (GAUGES[n % len(GAUGES)], n), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .name("Tag Gauge")
        .key_by(lambda reading: reading[0], key_type=Types.STRING())
        .process(CountPerGauge(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .name("Count Per Gauge")
    )
    final: dict[str, int] = {}
    with counts.execute_and_collect("keyed state") as results:
        for gauge, count in results:
            final[gauge] = max(count, final.get(gauge, 0))

    print(f"readings per gauge ({readings} readings):")
    for gauge in sorted(final):
        print(f"  {gauge:<10}  {final[gauge]:>6}")
    print(f"total: {sum(final.values())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
