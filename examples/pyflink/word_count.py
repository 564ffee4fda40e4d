"""Count words in batch mode (PyFlink's word_count example): RuntimeExecutionMode.BATCH makes the keyed reduce
emit one final (word, count) per word instead of a running count per occurrence."""

import logging
import sys

from fluvial.common import Types
from fluvial.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

LINES = [
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
]


def words(line):
    yield from line.split()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)
    print("Executing word_count example with default input data set.")
    print("Use --input to specify file input.")
    env.from_collection(LINES).flat_map(words).map(
        lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    ).key_by(lambda pair: pair[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
    env.execute()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")  # as PyFlink's example
    main()
