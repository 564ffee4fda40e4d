"""print() as PyFlink prints it, captured from real jobs: str() of untyped values, `+I[a, 1]` for rows,
`(a,1)` for tuple types, and the `N> ` prefix only when the print operator runs with parallelism above 1 — in
both execution modes (a TaskManager process's output is forwarded to the client's sys.stdout and sys.stderr)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from fluvial.common import Row, Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import ExecutionMode, environment


def _env(mode: ExecutionMode, parallelism: int) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


@pytest.mark.timeout(60)
def test_untyped_values_print_with_str_and_no_prefix_at_parallelism_one(capsys, mode):
    env = _env(mode, 1)
    env.from_collection([("a", 1), "plain", 3.5, None, [1, 2], Row(1, "x")]).print()
    env.execute()
    assert _lines(capsys) == ["('a', 1)", "plain", "3.5", "None", "[1, 2]", "<Row(1, 'x')>"]


@pytest.mark.timeout(60)
def test_typed_rows_print_as_flink_rows(capsys, mode):
    env = _env(mode, 1)
    row_type = Types.ROW_NAMED(["name", "count"], [Types.STRING(), Types.INT()])
    env.from_collection([Row(name="a", count=1), Row(name="b", count=None)], type_info=row_type).print()
    env.execute()
    assert _lines(capsys) == ["+I[a, 1]", "+I[b, null]"]


@pytest.mark.timeout(60)
def test_map_with_row_output_type_prints_plus_i(capsys, mode):
    env = _env(mode, 1)
    (
        env.from_collection([("a", 1), ("b", 2)])
        .map(lambda t: Row(t[0], t[1] * 10), output_type=Types.ROW([Types.STRING(), Types.INT()]))
        .print()
    )
    env.execute()
    assert _lines(capsys) == ["+I[a, 10]", "+I[b, 20]"]


@pytest.mark.timeout(60)
def test_tuple_type_prints_without_spaces(capsys, mode):
    env = _env(mode, 1)
    env.from_collection(
        [("a", 1), ("b", True)], type_info=Types.TUPLE([Types.STRING(), Types.PICKLED_BYTE_ARRAY()])
    ).print()
    env.execute()
    assert _lines(capsys) == ["(a,1)", "(b,True)"]


@pytest.mark.timeout(60)
def test_parallel_print_prefixes_subtask_number(capsys, mode):
    env = _env(mode, 2)
    env.from_source(NumberSequenceSource(1, 200)).map(lambda x: x * 2).print()
    env.execute()
    lines = _lines(capsys)
    assert len(lines) == 200
    parsed = [re.fullmatch(r"([12])> (\d+)", line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed) if not m][:5]
    assert sorted(int(m.group(2)) for m in parsed) == [x * 2 for x in range(1, 201)]
    assert Counter(m.group(1) for m in parsed).keys() == {"1", "2"}


@pytest.mark.timeout(60)
def test_print_at_parallelism_one_after_parallel_map_has_no_prefix(capsys, mode):
    env = _env(mode, 2)
    stream = env.from_source(NumberSequenceSource(1, 50)).map(lambda x: x + 1)
    stream.print().set_parallelism(1)
    env.execute()
    lines = _lines(capsys)
    assert sorted(map(int, lines)) == list(range(2, 52))


@pytest.mark.timeout(60)
def test_print_with_sink_identifier(capsys, mode):
    env = _env(mode, 2)
    env.from_source(NumberSequenceSource(1, 10)).print("ids")
    env.execute()
    lines = _lines(capsys)
    assert all(re.fullmatch(r"ids:[12]> \d+", line) for line in lines)
    assert sorted(int(line.split("> ")[1]) for line in lines) == list(range(1, 11))


@pytest.mark.timeout(60)
def test_print_to_err(capsys, mode):
    env = _env(mode, 1)
    env.from_collection(["e1", "e2"]).print_to_err()
    env.execute()
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["e1", "e2"]
    assert captured.out == ""


@pytest.mark.timeout(60)
def test_print_in_a_subprocess_matches_pyflink_word_count_output(mode):
    """On the program's real stdout: from a TaskManager process too (its output is forwarded to the client)."""
    program = textwrap.dedent(
        f"""
        from fluvial.common import Configuration, Types
        from fluvial.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration().set_string("local.taskmanager.mode", "{mode.value}"))
        env.set_parallelism(1)
        words = env.from_collection(["to be", "or not", "to be"]).flat_map(lambda l: l.split())
        counts = words.map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        counts.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
        env.execute("word count")
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["(to,1)", "(be,1)", "(or,1)", "(not,1)", "(to,2)", "(be,2)"]
