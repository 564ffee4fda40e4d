"""PyFlink's DataStream examples, as fluvial programs (`examples/pyflink`), print what PyFlink prints.

The expected lines are the output of PyFlink's own examples (their documented results); a `N> ` prefix
(which subtask printed) is dropped where the example runs at the default parallelism.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.programs import user_environment

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pyflink"
BANNER = "Printing result to stdout. Use --output to specify output path."


def run(*args: str) -> subprocess.CompletedProcess:
    """`python ARGS...` as a user runs it: fluvial's records reach the program's logging only from WARNING on (the
    suite forwards all of them to pytest's capture), so the examples' logging.basicConfig(stream=sys.stdout,
    level=INFO) — PyFlink's — adds nothing to their output."""
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=90, check=False, env=user_environment()
    )


def printed(*args: str) -> list[str]:
    done = run(*args)
    assert done.returncode == 0, done.stderr
    return [re.sub(r"^\d+> ", "", line) for line in done.stdout.splitlines()]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "variant, expected",
    [
        ("tumbling_time", ["(hi,0,5,4)", "(hi,5,10,3)", "(hi,15,20,1)"]),
        (
            "sliding_time",
            [
                "(hi,-2,3,2)",
                "(hi,0,5,4)",
                "(hi,2,7,4)",
                "(hi,4,9,3)",
                "(hi,6,11,2)",
                "(hi,8,13,2)",
                "(hi,12,17,1)",
                "(hi,14,19,1)",
            ],
        ),
        ("session_gap", ["(hi,1,14,6)", "(hi,15,20,1)"]),
        ("session_dynamic_gap", ["(hi,1,30,7)"]),
        ("tumbling_time_continuous", ["(hi,0,10,7)", "(hi,0,10,7)", "(hi,10,20,1)"]),
        ("tumbling_count", ["(hi,4)", "(hello,6)", "(hello,12)"]),
    ],
)
def test_windowing_examples(variant, expected):
    assert printed(str(EXAMPLES / "windowing.py"), variant) == [BANNER, *expected]


@pytest.mark.timeout(120)
def test_basic_operations_example():
    assert printed(str(EXAMPLES / "basic_operations.py")) == [
        """(1, '{"name": "Flink", "tel": 124, "addr": {"country": "Germany", "city": "Berlin"}}')""",
        """(2, '{"name": "hello", "tel": 136, "addr": {"country": "China", "city": "Shanghai"}}')""",
        """(3, '{"name": "world", "tel": 125, "addr": {"country": "USA", "city": "NewYork"}}')""",
        """(4, '{"name": "PyFlink", "tel": 33, "addr": {"country": "China", "city": "Hangzhou"}}')""",
        """(1, '{"name": "Flink", "tel": 124, "addr": {"country": "Germany", "city": "Berlin"}}')""",
        "('Germany', 123)",
        "('China', 135)",
        "('USA', 124)",
        "('China', 167)",
    ]


@pytest.mark.timeout(120)
def test_process_json_data_example():
    assert sorted(printed(str(EXAMPLES / "process_json_data.py"))) == [
        "(2, {'name': 'hello', 'tel': 136, 'addr': {'country': 'China', 'city': 'Shanghai'}})",
        "(4, {'name': 'PyFlink', 'tel': 33, 'addr': {'country': 'China', 'city': 'Hangzhou'}})",
    ]


@pytest.mark.timeout(120)
def test_word_count_example_counts_each_word_once():
    import collections
    import runpy

    lines = runpy.run_path(str(EXAMPLES / "word_count.py"))["LINES"]
    counts = collections.Counter(word for line in lines for word in line.split())
    out = printed(str(EXAMPLES / "word_count.py"))
    assert sorted(out[2:]) == sorted(f"({word},{count})" for word, count in counts.items())


@pytest.mark.timeout(120)
def test_state_access_example():
    assert sorted(printed(str(EXAMPLES / "state_access.py"))) == sorted(
        [
            "('Alice', 110.1)",
            "('Alice', 130.1)",
            "('Alice', 143.2)",
            "('Alice', 163.29999999999998)",
            "('Bob', 30.2)",
            "('Bob', 83.3)",
            "('Bob', 86.39999999999999)",
            "('Bob', 102.5)",
        ]
    )


@pytest.mark.timeout(120)
def test_event_time_timer_example_fires_each_timer_once_with_the_total():
    """Every record arrives before the first watermark, so each distinct timer (four per person) fires at the
    end of input and sees the final total."""
    assert (
        sorted(printed(str(EXAMPLES / "event_time_timer.py")))
        == ["('Alice', 163.29999999999998)"] * 4 + ["('Bob', 102.5)"] * 4
    )
