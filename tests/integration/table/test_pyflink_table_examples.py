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
        "+I[To, 1]", "+I[be,, 1]", "+I[or, 1]", "+I[not, 1]", "+I[to, 1]", "+I[be,--that, 1]", "+I[is, 1]",
        "+I[the, 1]", "+I[question:--, 1]", "+I[Whether, 1]", "+I['tis, 1]", "+I[nobler, 1]", "+I[in, 1]",
        "-U[the, 1]", "+U[the, 2]", "+I[mind, 1]", "-U[to, 1]", "+U[to, 2]", "+I[suffer, 1]", "+I[The, 1]",
        "+I[slings, 1]", "+I[and, 1]", "+I[arrows, 1]", "+I[of, 1]", "+I[outrageous, 1]", "+I[fortune, 1]",
        "+I[Or, 1]", "-U[to, 2]", "+U[to, 3]", "+I[take, 1]", "+I[arms, 1]", "+I[against, 1]", "+I[a, 1]",
        "+I[sea, 1]", "-U[of, 1]", "+U[of, 2]", "+I[troubles,, 1]",
    ]


@pytest.mark.timeout(100)
def test_process_json_data():
    assert unprefixed(printed(str(EXAMPLES / "process_json_data.py"))) == [
        "+I[1, Germany]", "+I[2, China]", "+I[3, USA]", "+I[4, China]"]


@pytest.mark.timeout(100)
def test_multi_sink():
    assert unprefixed(printed(str(EXAMPLES / "multi_sink.py"))) == [
        "+I[1, Hello]", "+I[2, World]", "+I[3, Flink]", "+I[3, Flink]", "+I[4, PyFlink]"]
