"""PyFlink's Table API examples, as fluvial programs (`examples/pyflink/table`), print what PyFlink prints.

The expected lines were printed by the same programs with `fluvial.` imports changed to `pyflink.`, run on
PyFlink 2.3. Where the sink runs at the default parallelism the `N> ` prefix (which subtask printed) and the
order across subtasks are the engines' own, so those compare as sorted lines without prefix; window results
fired by one watermark compare as sorted lines too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "pyflink" / "table"


def printed(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def unprefixed(lines: list[str]) -> list[str]:
    return sorted(re.sub(r"^\d+> ", "", line) for line in lines)


@pytest.mark.timeout(100)
def test_word_count():
    assert printed(str(EXAMPLES / "word_count.py")) == [
        "+I[To, 1]",
        "+I[be,, 1]",
        "+I[or, 1]",
        "+I[not, 1]",
        "+I[to, 1]",
        "+I[be,--that, 1]",
        "+I[is, 1]",
        "+I[the, 1]",
        "+I[question:--, 1]",
        "+I[Whether, 1]",
        "+I['tis, 1]",
        "+I[nobler, 1]",
        "+I[in, 1]",
        "-U[the, 1]",
        "+U[the, 2]",
        "+I[mind, 1]",
        "-U[to, 1]",
        "+U[to, 2]",
        "+I[suffer, 1]",
        "+I[The, 1]",
        "+I[slings, 1]",
        "+I[and, 1]",
        "+I[arrows, 1]",
        "+I[of, 1]",
        "+I[outrageous, 1]",
        "+I[fortune, 1]",
        "+I[Or, 1]",
        "-U[to, 2]",
        "+U[to, 3]",
        "+I[take, 1]",
        "+I[arms, 1]",
        "+I[against, 1]",
        "+I[a, 1]",
        "+I[sea, 1]",
        "-U[of, 1]",
        "+U[of, 2]",
        "+I[troubles,, 1]",
    ]


@pytest.mark.timeout(100)
def test_process_json_data():
    assert unprefixed(printed(str(EXAMPLES / "process_json_data.py"))) == [
        "+I[1, Germany]",
        "+I[2, China]",
        "+I[3, USA]",
        "+I[4, China]",
    ]


@pytest.mark.timeout(100)
def test_multi_sink():
    assert unprefixed(printed(str(EXAMPLES / "multi_sink.py"))) == [
        "+I[1, Hello]",
        "+I[2, World]",
        "+I[3, Flink]",
        "+I[3, Flink]",
        "+I[4, PyFlink]",
    ]


@pytest.mark.timeout(100)
def test_datastream_and_table():
    assert printed(str(EXAMPLES / "datastream_and_table.py")) == ["+I[4]", "+I[5]", "+I[6]", "+I[7]", "+I[8]"]


@pytest.mark.timeout(100)
@pytest.mark.parametrize(
    "kind, expected",
    [
        (
            "tumble",
            [
                "+I[Alice, 130.1, 1970-01-01T00:00:00Z, 1970-01-01T00:00:05Z]",
                "+I[Bob, 86.4, 1970-01-01T00:00:00Z, 1970-01-01T00:00:05Z]",
                "+I[Bob, 16.1, 1970-01-01T00:00:05Z, 1970-01-01T00:00:10Z]",
                "+I[Alice, 13.1, 1970-01-01T00:00:05Z, 1970-01-01T00:00:10Z]",
                "+I[Alice, 20.1, 1970-01-01T00:00:10Z, 1970-01-01T00:00:15Z]",
            ],
        ),
        (
            "slide",
            [
                "+I[Alice, 110.1, 1969-12-31T23:59:58Z, 1970-01-01T00:00:03Z]",
                "+I[Bob, 53.1, 1969-12-31T23:59:58Z, 1970-01-01T00:00:03Z]",
                "+I[Alice, 130.1, 1970-01-01T00:00:00Z, 1970-01-01T00:00:05Z]",
                "+I[Bob, 86.399994, 1970-01-01T00:00:00Z, 1970-01-01T00:00:05Z]",
                "+I[Bob, 86.399994, 1970-01-01T00:00:02Z, 1970-01-01T00:00:07Z]",
                "+I[Alice, 33.1, 1970-01-01T00:00:02Z, 1970-01-01T00:00:07Z]",
                "+I[Alice, 13.1, 1970-01-01T00:00:04Z, 1970-01-01T00:00:09Z]",
                "+I[Bob, 46.300003, 1970-01-01T00:00:04Z, 1970-01-01T00:00:09Z]",
                "+I[Bob, 16.1, 1970-01-01T00:00:06Z, 1970-01-01T00:00:11Z]",
                "+I[Alice, 20.1, 1970-01-01T00:00:06Z, 1970-01-01T00:00:11Z]",
                "+I[Alice, 20.1, 1970-01-01T00:00:08Z, 1970-01-01T00:00:13Z]",
                "+I[Alice, 20.1, 1970-01-01T00:00:10Z, 1970-01-01T00:00:15Z]",
            ],
        ),
        (
            "session",  # PyFlink 2.3's windowing/session_window.py printed these
            [
                "+I[Alice, 130.1, 1970-01-01T00:00:01Z, 1970-01-01T00:00:08Z]",
                "+I[Bob, 99.4, 1970-01-01T00:00:02Z, 1970-01-01T00:00:13Z]",
                "+I[Alice, 20.1, 1970-01-01T00:00:10Z, 1970-01-01T00:00:15Z]",
            ],
        ),
        (
            "over",  # PyFlink 2.3's windowing/over_window.py printed these
            [
                "+I[Alice, 110.1]",
                "+I[Bob, 53.1]",
                "+I[Alice, 110.1]",
                "+I[Bob, 53.1]",
                "+I[Bob, 53.1]",
                "+I[Alice, 110.1]",
                "+I[Bob, 30.2]",
                "+I[Alice, 20.1]",
            ],
        ),
        (
            "pandas",  # PyFlink 2.3's pandas/pandas_udaf.py printed these (a FLOAT column is a float32 Series)
            [
                "+I[Alice, 65.05, 1970-01-01T00:00:00Z, 1970-01-01T00:00:05Z]",
                "+I[Bob, 28.800001, 1970-01-01T00:00:00Z, 1970-01-01T00:00:05Z]",
                "+I[Bob, 16.1, 1970-01-01T00:00:05Z, 1970-01-01T00:00:10Z]",
                "+I[Alice, 13.1, 1970-01-01T00:00:05Z, 1970-01-01T00:00:10Z]",
                "+I[Alice, 20.1, 1970-01-01T00:00:10Z, 1970-01-01T00:00:15Z]",
            ],
        ),
    ],
)
def test_group_windows(kind, expected):
    # A FLOAT sum depends on the order of its additions: Flink adds a sliding window's slices in time order,
    # fluvial a window's rows in arrival order (86.399994 against 86.4). Sums compare to 4 decimals.
    assert sorted(map(_rounded, printed(str(EXAMPLES / "windows.py"), kind))) == sorted(map(_rounded, expected))


def _rounded(line: str) -> str:
    return re.sub(r"\d+\.\d+(?=,)", lambda m: f"{float(m.group(0)):.4f}", line)


@pytest.mark.timeout(100)
def test_async_scalar_function():
    # datagen's rows are random, so the output's shape compares: two tableau results of ten rows, each row's
    # async result made from the key in its own row (results stay in input order)
    lines = printed(str(EXAMPLES / "async_scalar_function.py"))
    rows = [line for line in lines if line.startswith("| +I |")]
    assert len(rows) == 20 and lines.count("10 rows in set") == 2
    cells = [[c.strip() for c in row.strip("|").split("|")[1:]] for row in rows]
    assert all(value == f"db_value_for_{key}" and len(key) == 1 for key, value in cells[:10])
    assert all(re.fullmatch(rf"Product {re.escape(key)}: \$\d+", value) for key, value in cells[10:])
    headers = [line for line in lines if line.startswith("| op |")]
    assert [h.split("|")[2:4] for h in headers] == [
        [f"{'user_id':>31} ", f"{'user_info':>31} "],
        [f"{'product_id':>31} ", f"{'product_info':>31} "],
    ]
