"""Every example runs as a user would run it — `python examples/X.py` from anywhere, and `fluvial run|plan` —
and prints the right answer."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORDS = EXAMPLES / "data" / "words.txt"


def run_python(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *map(str, args)], cwd=cwd, check=False, capture_output=True, text=True, timeout=60
    )


def expected_word_counts(path: Path) -> collections.Counter:
    """The same count in plain Python: lowercase, words are runs of letters."""
    return collections.Counter(w for line in path.read_text().splitlines() for w in re.findall(r"[a-z]+", line.lower()))


def parse_table(stdout: str) -> list[tuple[str, int]]:
    return [(word, int(count)) for _, word, count in re.findall(r"^\s+(\d+)\s+([a-z]+)\s+(\d+)$", stdout, re.MULTILINE)]


def test_the_bundled_text_is_long_enough_to_be_interesting():
    lines = WORDS.read_text().splitlines()
    assert len(lines) >= 150
    assert len(expected_word_counts(WORDS)) > 300


@pytest.mark.timeout(60)
def test_word_count_prints_the_top_ten_words_and_the_total_from_any_directory(tmp_path):
    done = run_python(EXAMPLES / "word_count.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    counts = expected_word_counts(WORDS)
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]
    assert parse_table(done.stdout) == top
    assert f"total: {sum(counts.values())} words, {len(counts)} distinct" in done.stdout


@pytest.mark.timeout(60)
def test_word_count_reads_a_file_given_as_argument(tmp_path):
    text = tmp_path / "small.txt"
    text.write_text("Stream, stream; river!\nthe RIVER and the stream\n")
    done = run_python(EXAMPLES / "word_count.py", text, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert parse_table(done.stdout) == [("stream", 3), ("river", 2), ("the", 2), ("and", 1)]
    assert "total: 8 words, 4 distinct" in done.stdout


@pytest.mark.timeout(60)
def test_word_count_under_fluvial_run_matches_plain_python(tmp_path):
    done = run_python("-m", "fluvial", "run", EXAMPLES / "word_count.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    counts = expected_word_counts(WORDS)
    assert parse_table(done.stdout) == sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]


@pytest.mark.timeout(60)
def test_word_count_plan_shows_the_hash_exchange_without_running(tmp_path):
    done = run_python("-m", "fluvial", "plan", "--format", "json", EXAMPLES / "word_count.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    # the collect sink runs as one subtask (as Flink's): it chains to the count only at parallelism 1
    parallel = (os.cpu_count() or 1) > 1
    assert [v["name"] for v in plan["vertices"]] == [
        "Source: words.txt -> Split Words -> Pair With One",
        *(["Count Per Word", "Collect Sink"] if parallel else ["Count Per Word -> Collect Sink"]),
    ]
    assert [e["ship_strategy"] for e in plan["edges"]] == (["HASH", "REBALANCE"] if parallel else ["HASH"])
    assert "Top 10" not in done.stdout + done.stderr


@pytest.mark.timeout(60)
def test_slot_sharing_prints_three_vertices_in_three_groups_then_runs(tmp_path):
    done = run_python(EXAMPLES / "slot_sharing.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    groups = re.findall(r"^  \[(\d)\] (.+)\n      parallelism: 1\n      slot sharing group: (\S+)$", out, re.MULTILINE)
    assert groups == [
        ("1", "Source: Collection Source -> Map", "default"),
        ("2", "Filter -> Map", "group_03"),
        ("3", "Filter -> Map -> Print to Std. Out", "group_04"),
    ]
    assert out.count("not chained: the operators are in different slot sharing groups") == 2
    assert "slots required: 3 (default: 1, group_03: 1, group_04: 1)" in out
    # the plan comes first, then the job's output: every line upper-cased, in order (parallelism 1)
    printed = out.split("slots required:")[1].splitlines()[1:]
    assert [line for line in printed if line] == [
        "A RIVER BEGINS AS A RUMOUR IN THE HILLS",
        "THE SEEP BECOMES A TRICKLE",
        "THE TRICKLE A RILL",
        "THE RILL A BROOK",
        "AND THE BROOK BEGINS TO CALL ITSELF A STREAM",
    ]


@pytest.mark.timeout(60)
def test_slot_sharing_plan_through_the_cli(tmp_path):
    done = run_python("-m", "fluvial", "plan", "-f", "dot", EXAMPLES / "slot_sharing.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('digraph "slot sharing groups" {')
    assert done.stdout.count("subgraph cluster_") == 3
    assert "A RIVER BEGINS" not in done.stdout + done.stderr


@pytest.mark.timeout(60)
def test_keyed_state_counts_every_reading_of_every_gauge(tmp_path):
    done = run_python(EXAMPLES / "keyed_state.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = dict(re.findall(r"^\s+([a-z-]+)\s+(\d+)$", done.stdout, re.MULTILINE))
    assert rows == {gauge: "200" for gauge in ("dam", "delta", "ferry", "mill-weir", "old-bridge")}
    assert "total: 1000" in done.stdout


@pytest.mark.timeout(60)
def test_keyed_state_with_an_uneven_count_under_fluvial_run(tmp_path):
    done = run_python("-m", "fluvial", "run", EXAMPLES / "keyed_state.py", "12", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = dict(re.findall(r"^\s+([a-z-]+)\s+(\d+)$", done.stdout, re.MULTILINE))
    # reading n goes to gauge n % 5: 1..12 gives gauges 1 and 2 three readings, the others two
    assert rows == {"mill-weir": "2", "old-bridge": "3", "ferry": "3", "dam": "2", "delta": "2"}
    assert "total: 12" in done.stdout


@pytest.mark.timeout(90)
def test_live_clicks_prints_one_line_per_window_with_every_click_counted_and_its_dashboard(tmp_path):
    """`make demo`'s live job, for 3 seconds: every click lands in exactly one window's line."""
    done = subprocess.run(
        [sys.executable, "-m", "fluvial", "run", "--web", "-D", "rest.port=0", str(EXAMPLES / "live_clicks.py"), "3"],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=80,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"Dashboard and REST API of job [0-9a-f]{32}: http://127\.0\.0\.1:\d+", done.stderr)
    lines = [line for line in done.stdout.splitlines() if "+2s" in line]
    assert lines and all(not line.startswith(("1>", "2>")) for line in lines)
    counted = sum(int(count) for line in lines for count in re.findall(r"/[a-z]+ +(\d+)", line))
    assert counted == 2 * 2_000 * 3  # two subtasks, CLICKS_PER_SECOND each, 3 seconds
