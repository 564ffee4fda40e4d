"""Parse JSON once in a map and filter on the parsed value, at the default parallelism (PyFlink's
process_json_data example)."""

import json
import logging
import sys

from fluvial.datastream import StreamExecutionEnvironment

CONTACTS = [
    (1, '{"name": "Flink", "tel": 123, "addr": {"country": "Germany", "city": "Berlin"}}'),
    (2, '{"name": "hello", "tel": 135, "addr": {"country": "China", "city": "Shanghai"}}'),
    (3, '{"name": "world", "tel": 124, "addr": {"country": "USA", "city": "NewYork"}}'),
    (4, '{"name": "PyFlink", "tel": 32, "addr": {"country": "China", "city": "Hangzhou"}}'),
]


def parse_and_bump(pair):
    contact = json.loads(pair[1])
    contact["tel"] += 1
    return pair[0], contact


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(CONTACTS).map(parse_and_bump).filter(lambda pair: "China" in pair[1]["addr"]["country"]).print()
    env.execute()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")  # as PyFlink's example
    main()
