"""map, filter and a keyed running sum over rows typed `Types.ROW_NAMED(["id", "info"], ...)`: the functions
reach the fields as `row.id` and `row.info`, as in PyFlink's basic_operations example."""

import json
import logging
import sys

from fluvial.common import Types
from fluvial.datastream import StreamExecutionEnvironment

CONTACTS = [
    (1, '{"name": "Flink", "tel": 123, "addr": {"country": "Germany", "city": "Berlin"}}'),
    (2, '{"name": "hello", "tel": 135, "addr": {"country": "China", "city": "Shanghai"}}'),
    (3, '{"name": "world", "tel": 124, "addr": {"country": "USA", "city": "NewYork"}}'),
    (4, '{"name": "PyFlink", "tel": 32, "addr": {"country": "China", "city": "Hangzhou"}}'),
]


def bump_tel(row):
    contact = json.loads(row.info)
    contact["tel"] += 1
    return row.id, json.dumps(contact)


def country_and_tel(row):
    contact = json.loads(row.info)
    return contact["addr"]["country"], contact["tel"]


def run_and_print(stream, env):
    stream.print()
    env.execute()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    contacts = env.from_collection(CONTACTS, type_info=Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()]))
    run_and_print(contacts.map(bump_tel), env)
    run_and_print(contacts.filter(lambda row: row.id == 1).map(bump_tel), env)
    run_and_print(contacts.map(country_and_tel).key_by(lambda pair: pair[0]).sum(1), env)


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")  # as PyFlink's example
    main()
