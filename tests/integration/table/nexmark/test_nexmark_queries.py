"""The Nexmark queries of Flink's SQL benchmark (q0-q8 but q6, as the reference) on fluvial's SQL, over a
bounded `'connector' = 'nexmark'` table, against PyFlink 2.3's results over the same events
(`expected.json`, made by `record_pyflink.py`): the same result schema, and the same final table (the
changelog applied).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.nexmark_queries import QUERIES, UNSUPPORTED, VIEWS, nexmark_ddl
from fluvial.table import EnvironmentSettings, TableEnvironment

from ..differential.normalize import normalize_row
from .results import FinalTable
from .setup import OPTIONS, PARALLEL

EXPECTED = json.loads((Path(__file__).parent / "expected.json").read_text())
EXPECTED_P2 = json.loads((Path(__file__).parent / "expected_p2.json").read_text())


def _environment(parallelism: int = 1) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    t_env.execute_sql(nexmark_ddl(OPTIONS))
    for view in VIEWS:
        t_env.execute_sql(view)
    return t_env


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("name", "parallelism"), [(n, 1) for n in sorted(QUERIES)] + [(n, 2) for n in PARALLEL], ids=str
)
def test_query_matches_pyflink(name: str, parallelism: int) -> None:
    """At parallelism 2 the table has two generators, PyFlink's input their two files."""
    table = _environment(parallelism).sql_query(QUERIES[name])
    final = FinalTable()
    with table.execute().collect() as rows:
        for r in rows:
            final.add(r.get_row_kind().short_string(), normalize_row(list(r)))
    expected = dict((EXPECTED if parallelism == 1 else EXPECTED_P2)[name])
    assert str(table.get_resolved_schema()) == expected.pop("schema")
    assert final.summary() == expected


def test_q6_is_unsupported_as_in_flink() -> None:
    assert "q6" in UNSUPPORTED and "q6" not in QUERIES


@pytest.mark.timeout(60)
def test_the_generator_runs_in_two_parallel_splits() -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "2")
    t_env.execute_sql(nexmark_ddl({**OPTIONS, "events.num": "1000"}))
    table = t_env.sql_query("SELECT event_type, COUNT(*) AS n, MIN(`dateTime`) FROM nexmark GROUP BY event_type")
    final = FinalTable()
    with table.execute().collect() as rows:
        for r in rows:
            final.add(r.get_row_kind().short_string(), normalize_row(list(r)))
    assert final.summary()["rows"] == [
        [0, 20, "T2024-01-01T00:00:00"],
        [1, 60, "T2024-01-01T00:00:00.010000"],
        [2, 920, "T2024-01-01T00:00:00.040000"],
    ]


@pytest.mark.timeout(60)
def test_a_datastream_job_reads_the_source() -> None:
    from fluvial.common import Types
    from fluvial.common.watermark_strategy import WatermarkStrategy
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.connectors.nexmark import NexmarkConfig, NexmarkSource

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    source = NexmarkSource(NexmarkConfig(events_num=500, base_time=0))
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "nexmark")
    with stream.map(lambda row: row.event_type, output_type=Types.INT()).execute_and_collect() as kinds:
        counts = Counter(kinds)
    assert counts == {0: 10, 1: 30, 2: 460}
