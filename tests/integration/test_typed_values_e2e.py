"""Declared types shape the values operators hand on, as PyFlink's do: `Types.ROW_NAMED` turns tuples into
Rows with field access, aggregations address named fields, `Types.FLOAT` prints as PyFlink prints it, and a
value that does not fit its type fails the job naming the operator and the field; and a typed function's
methods are looked up once per job, not once per record or timer."""

from __future__ import annotations

from collections import Counter

import pytest

from fluvial.common import Duration, Types, WatermarkStrategy
from fluvial.common.errors import InvalidJobError, JobExecutionException
from fluvial.datastream import (
    AggregateFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from fluvial.datastream.window import TumblingEventTimeWindows
from fluvial.testing import ExecutionMode, environment

RECORD = Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])


def _env(mode: ExecutionMode, parallelism: int = 1) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


@pytest.mark.timeout(60)
def test_from_collection_with_named_row_type_hands_rows_to_the_next_function(mode):
    # thread TaskManagers only: this version's MiniCluster has no other mode yet
    env = _env(mode, parallelism=2)
    ds = env.from_collection([(1, "hi"), (2, "hello")], type_info=RECORD)
    got = sorted(ds.map(lambda record: f"{record.id}:{record.info}").execute_and_collect())
    assert got == ["1:hi", "2:hello"]


@pytest.mark.timeout(60)
def test_map_output_type_turns_returned_tuples_into_rows(capsys, mode):
    env = _env(mode)
    ds = env.from_collection(["a b", "c"])
    rows = ds.map(
        lambda line: (line, len(line.split())),
        output_type=Types.ROW_NAMED(["line", "words"], [Types.STRING(), Types.INT()]),
    )
    assert list(rows.map(lambda r: r.words * 10).execute_and_collect()) == [20, 10]
    assert [
        r.as_dict()
        for r in _env(mode)
        .from_collection([("x", 1)], type_info=Types.ROW_NAMED(["line", "words"], [Types.STRING(), Types.INT()]))
        .execute_and_collect()
    ] == [{"line": "x", "words": 1}]


@pytest.mark.timeout(60)
def test_aggregations_by_field_name_on_named_rows(mode):
    env = _env(mode)
    ds = env.from_collection(
        [("a", 1, 5.0), ("b", 2, 1.0), ("a", 3, 2.0)],
        type_info=Types.ROW_NAMED(["k", "n", "v"], [Types.STRING(), Types.INT(), Types.DOUBLE()]),
    )
    keyed = ds.key_by(lambda r: r.k)
    assert [tuple(r) for r in keyed.sum("n").execute_and_collect()] == [("a", 1, 5.0), ("b", 2, 1.0), ("a", 4, 5.0)]
    env = _env(mode)
    ds = env.from_collection(
        [("a", 1, 5.0), ("a", 3, 2.0)],
        type_info=Types.ROW_NAMED(["k", "n", "v"], [Types.STRING(), Types.INT(), Types.DOUBLE()]),
    )
    assert [r.n for r in ds.key_by(lambda r: r.k).min_by("v").execute_and_collect()] == [1, 3]


@pytest.mark.timeout(60)
def test_float_values_print_as_pyflink_prints_them(capsys, mode):
    env = _env(mode)
    env.from_collection([0.1, 1 / 3], type_info=Types.FLOAT()).print()
    env.from_collection([0.1], type_info=Types.FLOAT()).map(lambda v: v).print()
    env.execute()
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted(["0.1", "0.33333334", "0.10000000149011612"])


@pytest.mark.timeout(60)
def test_a_value_that_does_not_fit_fails_the_job_naming_operator_and_field(mode):
    env = _env(mode)
    env.from_collection([1, 2]).map(lambda n: (n, "x" * n), output_type=RECORD).name("to record").filter(
        lambda r: True
    ).map(lambda r: (r.id, r.id), output_type=RECORD).name("broken").print()
    with pytest.raises(JobExecutionException) as caught:
        env.execute()
    message = str(caught.value.__cause__)
    assert "'broken'" in message and "field 'info'" in message and "is not a String" in message


def test_from_collection_refuses_a_value_that_does_not_fit_when_the_job_is_built(mode):
    env = _env(mode)
    with pytest.raises(InvalidJobError, match=r"Collection Source.*field 'id'.*expected an int, got str"):
        env.from_collection([("7", "text")], type_info=RECORD)


class Split(ProcessFunction):
    TAG = OutputTag("long", Types.ROW_NAMED(["word"], [Types.STRING()]))

    def process_element(self, value, ctx):
        if len(value) > 3:
            yield self.TAG, (value,)
        else:
            yield value, len(value)


@pytest.mark.timeout(60)
def test_process_results_and_side_outputs_are_shaped_by_their_own_types(mode):
    env = _env(mode)
    main = env.from_collection(["ab", "river", "c"]).process(
        Split(), output_type=Types.ROW_NAMED(["word", "length"], [Types.STRING(), Types.INT()])
    )
    side = main.get_side_output(Split.TAG)
    results = main.map(lambda r: r.length).union(side.map(lambda r: r.word.upper())).execute_and_collect()
    assert sorted(map(str, results)) == ["1", "2", "RIVER"]


@pytest.mark.timeout(60)
def test_project_keeps_the_chosen_tuple_fields_in_order(capsys, mode):
    env = _env(mode)
    ds = env.from_collection([(1, "a", True)], type_info=Types.TUPLE([Types.INT(), Types.STRING(), Types.BOOLEAN()]))
    projected = ds.project(2, 0)
    assert projected.get_type() == Types.TUPLE([Types.BOOLEAN(), Types.INT()])
    projected.print()
    env.execute()
    assert capsys.readouterr().out.splitlines() == ["(true,1)"]


def test_project_refuses_streams_that_are_not_tuple_typed(mode):
    env = _env(mode)
    with pytest.raises(InvalidJobError, match="Only Tuple DataStreams can be projected"):
        env.from_collection([(1, 2)]).project(0)


def _word_counts(env: StreamExecutionEnvironment, typed: bool) -> list:
    pair = {"output_type": Types.TUPLE([Types.STRING(), Types.LONG()])} if typed else {}
    words = ["river", "lake", "river", "sea", "lake", "river"]
    source = env.from_collection(words, type_info=Types.STRING()) if typed else env.from_collection(words)
    return list(
        source.map(lambda word: (word, 1), **pair)
        .key_by(lambda p: p[0], key_type=Types.STRING() if typed else None)
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda p: [p[0], p[1] * 10], **pair)  # a list declared TUPLE arrives as a tuple
        .execute_and_collect()
    )


@pytest.mark.timeout(60)
def test_a_typed_chain_and_an_untyped_one_give_the_same_records(mode):
    typed = _word_counts(_env(mode, parallelism=2), typed=True)
    untyped = _word_counts(_env(mode, parallelism=2), typed=False)
    assert sorted(typed) == sorted(tuple(v) for v in untyped)
    assert {type(v) for v in typed} == {tuple}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("boundary", ["network edge", "sink"])
def test_a_misfit_is_caught_where_the_stream_leaves_the_chain(mode, boundary):
    env = _env(mode)
    counted = (
        env.from_collection([1, 2, 3])
        .map(lambda n: (f"w{n}", "one" if n == 2 else 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .name("pairs")
    )
    if boundary == "network edge":
        counted.key_by(lambda p: p[0]).map(lambda p: p).print()
    else:
        counted.filter(lambda p: True).print()  # the filter keeps the declared type up to the sink
    with pytest.raises(JobExecutionException) as caught:
        env.execute()
    message = str(caught.value.__cause__)
    assert message == (
        "'pairs' produced a record whose field 'f1' does not fit its declared type "
        "TupleTypeInfo(String, Long): 'one' is not a Long (expected an int, got str); fix the "
        "function's result or its output_type / type_info"
    )


@pytest.mark.timeout(60)
def test_between_chained_functions_values_pass_as_they_are_as_in_pyflink(mode):
    env = _env(mode)
    got = (
        env.from_collection(["a", "b"])
        .map(lambda s: s * 2, output_type=Types.INT())
        .map(lambda s: s.upper())
        .execute_and_collect()
    )
    assert sorted(got) == ["AA", "BB"]


# -- a typed function's methods are looked up once, not per record ---------------------------------------------
# Behind a declared output type the runtime holds a TypedFunction, whose every method lookup builds a closure
# (`TypedFunction.__getattr__`): an operator that looked a method up per record or per timer paid that each time
# (a typed window aggregate ran three times slower than an untyped one). The functions below count the lookups
# of their methods; the counts are per job, whatever the number of records.

LOOKUPS: Counter[str] = Counter()
COUNTED = frozenset({"add", "create_accumulator", "process", "on_timer"})


class CountsLookups:
    def __getattribute__(self, name: str) -> object:
        if name in COUNTED:
            LOOKUPS[name] += 1
        return object.__getattribute__(self, name)


class Average(CountsLookups, AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value[1], accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class Totals(CountsLookups, ProcessWindowFunction):
    def process(self, key, context, elements):
        for element in elements:
            yield (key, context.window().start, element[1])


class OneTimerPerRecord(CountsLookups, KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[0])

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp)


class EventTime:
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


RECORDS = 1_000  # (timestamp, key): ten keys, ten 100 ms windows


def _events(env: StreamExecutionEnvironment):
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    return env.from_collection([(i, i % 10) for i in range(RECORDS)]).assign_timestamps_and_watermarks(strategy)


def _windowed(env: StreamExecutionEnvironment):
    return _events(env).key_by(lambda event: event[1]).window(TumblingEventTimeWindows.of(Duration.of_millis(100)))


@pytest.mark.timeout(60)
def test_a_typed_window_aggregate_looks_its_methods_up_once():
    LOOKUPS.clear()
    typed = _windowed(_env(ExecutionMode.THREADS)).aggregate(Average(), output_type=Types.FLOAT())
    results = sorted(typed.execute_and_collect())
    assert LOOKUPS["add"] <= 4 and LOOKUPS["create_accumulator"] <= 4, LOOKUPS
    untyped = _windowed(_env(ExecutionMode.THREADS)).aggregate(Average()).execute_and_collect()
    assert len(results) == 100 and results == sorted(untyped)


@pytest.mark.timeout(60)
def test_a_typed_process_window_function_is_looked_up_once_for_all_its_firings():
    LOOKUPS.clear()
    row = Types.ROW([Types.INT(), Types.LONG(), Types.INT()])
    typed = _windowed(_env(ExecutionMode.THREADS)).reduce(lambda a, b: (a[0], a[1] + b[1]), Totals(), output_type=row)
    assert len(list(typed.execute_and_collect())) == 100
    assert LOOKUPS["process"] <= 4, LOOKUPS


@pytest.mark.timeout(60)
def test_a_typed_keyed_process_function_looks_on_timer_up_once_for_all_its_timers():
    LOOKUPS.clear()
    row = Types.ROW([Types.INT(), Types.LONG()])
    fired = _events(_env(ExecutionMode.THREADS)).key_by(lambda event: event[1]).process(OneTimerPerRecord(), row)
    assert len(list(fired.execute_and_collect())) == RECORDS
    assert LOOKUPS["on_timer"] <= 4, LOOKUPS


class SplitUntyped(ProcessFunction):
    """No output_type on the operator: its side output still takes the tag's type, as in PyFlink."""

    TAG = OutputTag("long", Types.ROW_NAMED(["word", "length"], [Types.STRING(), Types.INT()]))

    def process_element(self, value, ctx):
        if value == "bad":
            yield self.TAG, (value, "not a length")
        elif len(value) > 3:
            yield self.TAG, (value, len(value))
        else:
            yield value


@pytest.mark.timeout(60)
def test_a_side_output_takes_its_tags_type_whatever_its_operators_type(mode):
    env = _env(mode)
    main = env.from_collection(["ab", "river", "c"]).process(SplitUntyped()).name("split")
    side = main.get_side_output(SplitUntyped.TAG)
    results = main.union(side.map(lambda r: f"{r.word.upper()}:{r.length}")).execute_and_collect()
    assert sorted(results) == ["RIVER:5", "ab", "c"]


@pytest.mark.timeout(60)
def test_a_side_output_value_that_does_not_fit_its_tags_type_fails_naming_operator_and_field(mode):
    env = _env(mode)
    main = env.from_collection(["ab", "bad"]).process(SplitUntyped()).name("split")
    main.get_side_output(SplitUntyped.TAG).print()
    with pytest.raises(JobExecutionException) as caught:
        env.execute()
    message = str(caught.value.__cause__)
    assert message.startswith("'split' produced a record whose field 'length' does not fit"), message
