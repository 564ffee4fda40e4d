"""A running total per person in keyed ValueState (`Types.PICKLED_BYTE_ARRAY`), printed at every payment, as in
PyFlink's state_access example."""

import logging
import sys

from fluvial.common.typeinfo import Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.functions import KeyedProcessFunction, RuntimeContext
from fluvial.datastream.state import ValueStateDescriptor

PAYMENTS = [
    ("Alice", 110.1),
    ("Bob", 30.2),
    ("Alice", 20.0),
    ("Bob", 53.1),
    ("Alice", 13.1),
    ("Bob", 3.1),
    ("Bob", 16.1),
    ("Alice", 20.1),
]


class RunningTotal(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, payment, ctx: "KeyedProcessFunction.Context"):
        total = (self.total.value() or 0) + payment[1]
        self.total.update(total)
        yield payment[0], total


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(PAYMENTS).key_by(lambda payment: payment[0]).process(RunningTotal()).print()
    env.execute()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")  # as PyFlink's example
    main()
