"""Every differential query that plans can be explained with all of Flink's sections and details: each node
kind has its Abstract Syntax Tree form and its physical form, and the plan as it runs (after push-down) still
translates into a JobGraph."""

from __future__ import annotations

from pathlib import Path

import pytest

from fluvial.table import EnvironmentSettings, ExplainDetail, TableEnvironment
from fluvial.table.errors import TableException

from .cases import CASES, TABLES

SECTIONS = ("== Abstract Syntax Tree ==", "== Optimized Physical Plan ==", "== Optimized Execution Plan ==")


@pytest.mark.timeout(90)
def test_every_planned_query_explains(tmp_path: Path) -> None:
    for _, file_name, content in TABLES.values():
        (tmp_path / file_name).write_text(content)
    explained = 0
    for case in CASES:
        t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        for table in case.tables:
            t_env.execute_sql(TABLES[table][0].replace("{dir}", str(tmp_path)))
        try:
            t_env.sql_query(case.query)
        except TableException:
            continue  # a query fluvial refuses, as PyFlink does: nothing to explain
        text = t_env.explain_sql(case.query, ExplainDetail.CHANGELOG_MODE, ExplainDetail.ESTIMATED_COST)
        assert all(section in text for section in SECTIONS), case.id
        assert "changelogMode=[" in text and "cumulative cost = {" in text, case.id
        explained += 1
    assert explained > 150
