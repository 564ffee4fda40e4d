"""Event-time timers, as in PyFlink's event_time_timer example: each payment adds to its person's total and sets
a timer two seconds of event time later; a firing timer prints the person's total. Timestamps come from the
records, watermarks allow two seconds of disorder, and the end of the input fires every timer left."""

import logging
import sys

from fluvial.common import Duration, WatermarkStrategy
from fluvial.common.typeinfo import Types
from fluvial.common.watermark_strategy import TimestampAssigner
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.functions import KeyedProcessFunction, RuntimeContext
from fluvial.datastream.state import ValueStateDescriptor

PAYMENTS = [
    (1000, "Alice", 110.1),
    (4000, "Bob", 30.2),
    (3000, "Alice", 20.0),
    (2000, "Bob", 53.1),
    (5000, "Alice", 13.1),
    (3000, "Bob", 3.1),
    (7000, "Bob", 16.1),
    (10000, "Alice", 20.1),
]


class TotalAfterTwoSeconds(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, payment, ctx: "KeyedProcessFunction.Context"):
        self.total.update((self.total.value() or 0) + payment[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 2000)

    def on_timer(self, timestamp: int, ctx: "KeyedProcessFunction.OnTimerContext"):
        yield ctx.get_current_key(), self.total.value()


class PaymentTime(TimestampAssigner):
    def extract_timestamp(self, payment, record_timestamp: int) -> int:
        return int(payment[0])


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    payments = env.from_collection(PAYMENTS).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2)).with_timestamp_assigner(PaymentTime())
    )
    payments.key_by(lambda payment: payment[1]).process(TotalAfterTwoSeconds()).print()
    env.execute()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")  # as PyFlink's example
    main()
