"""Processing-time windows and OVER frames in running jobs, checked by invariants (their exact results depend on
wall time; tests/unit/table/test_proctime.py checks those on a manual clock): the source emits every row, then
pauses until the test has seen each row counted, so no window is left open when the input ends — as in Flink,
a processing-time window still open at the end of input never fires."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fluvial.common.typeinfo import Types
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.table import StreamTableEnvironment
from fluvial.table.expressions import col
from fluvial.testing import Pause, ScriptedSource

pytestmark = pytest.mark.timeout(60)

ROWS = 600


def table_of(tmp_path: Path, release: Path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t = StreamTableEnvironment.create(env)
    script: list = [(i % 5, i) for i in range(1, ROWS + 1)] + [Pause(str(release))]
    ds = env.from_source(
        ScriptedSource(script),
        WatermarkStrategy.no_watermarks(),
        "rows",
        type_info=Types.ROW_NAMED(["k", "id"], [Types.INT(), Types.INT()]),
    )
    return t, t.from_data_stream(ds, col("k"), col("id"), col("pt").proctime)


def collect_until(result, done, release: Path) -> list:
    """Read the job's rows; once `done(rows)`, let the source end; then read the rest."""
    rows: list = []
    timer = threading.Timer(40, release.touch)  # a job that never gets there still ends, and the test fails
    timer.start()
    try:
        with result.collect() as it:
            for r in it:
                rows.append(r)
                if not release.exists() and done(rows):
                    release.touch()
    finally:
        timer.cancel()
    return rows


def test_proctime_tumble_counts_every_row_once(tmp_path: Path):
    release = tmp_path / "release"
    t, table = table_of(tmp_path, release)
    t.create_temporary_view("src", table)
    result = t.execute_sql(
        "SELECT k, window_start, COUNT(*) AS c, SUM(id) AS s FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(pt), "
        "INTERVAL '0.2' SECOND)) GROUP BY k, window_start, window_end"
    )
    rows = collect_until(result, lambda rows: sum(r[2] for r in rows) >= ROWS, release)
    assert sum(r[2] for r in rows) == ROWS
    assert sum(r[3] for r in rows) == ROWS * (ROWS + 1) // 2
    assert len({(r[0], r[1]) for r in rows}) == len(rows)  # one result per key and window


def test_proctime_over_emits_each_row_once_with_a_running_count(tmp_path: Path):
    release = tmp_path / "release"
    t, table = table_of(tmp_path, release)
    t.create_temporary_view("src", table)
    result = t.execute_sql(
        "SELECT k, id, COUNT(*) OVER (PARTITION BY k ORDER BY pt ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
        "AS n FROM src"
    )
    rows = collect_until(result, lambda rows: len(rows) >= ROWS, release)
    assert sorted(r[1] for r in rows) == list(range(1, ROWS + 1))
    for k in range(5):  # each key's running count goes 1, 2, 3, ... in its rows' order
        assert sorted(r[2] for r in rows if r[0] == k) == list(range(1, ROWS // 5 + 1))
