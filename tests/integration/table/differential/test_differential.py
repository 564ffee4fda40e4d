"""Flink SQL on fluvial against PyFlink's recorded results (`expected.json`, made by `record_pyflink.py`).

Each case's result schema (names and types, nullability included) and its rows must equal PyFlink's: the
changelog row for row (+I/-U/+U/-D, in order) for queries at parallelism 1, or as a multiset for windows.
A case PyFlink rejects must be rejected by fluvial too, with a TableException whose message names the
position when the statement is SQL text.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment, TableException

from .cases import CASES, TABLES
from .normalize import normalize_row

EXPECTED = json.loads((Path(__file__).parent / "expected.json").read_text())
KNOWN_DIFFERENCES: dict[str, str] = {}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("differential")
    for _, file_name, content in TABLES.values():
        (directory / file_name).write_text(content)
    return directory


def _run(case, directory: Path) -> dict:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    for table in case.tables:
        t_env.execute_sql(TABLES[table][0].replace("{dir}", str(directory)))
    if case.setup:
        t_env.get_config().set("python.files", str(Path(__file__).parent / "diff_udfs.py"))
    for statement in case.setup:
        t_env.execute_sql(statement)
    table = t_env.sql_query(case.query)
    schema = str(table.get_resolved_schema())
    with table.execute().collect() as rows:
        changelog = [[r.get_row_kind().short_string(), *normalize_row(list(r))] for r in rows]
    return {"schema": schema, "rows": changelog}


def _final(changelog: list[list]) -> Counter:
    """The table a changelog leaves: +I/+U add a row, -U/-D take one away."""
    table: Counter = Counter()
    for kind, *values in changelog:
        table[json.dumps(values)] += 1 if kind in ("+I", "+U") else -1
    return +table


@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_pyflink(case, data_dir: Path) -> None:
    if case.id in KNOWN_DIFFERENCES:
        pytest.xfail(KNOWN_DIFFERENCES[case.id])
    expected = EXPECTED[case.id]
    if "error" in expected:
        with pytest.raises(TableException) as raised:
            _run(case, data_dir)
        assert "line" in str(raised.value), f"the error names no position: {raised.value}"
        return
    actual = _run(case, data_dir)
    assert actual["schema"] == expected["schema"]
    if case.compare == "set":
        assert Counter(map(json.dumps, actual["rows"])) == Counter(map(json.dumps, expected["rows"]))
    elif case.compare == "final":
        assert _final(actual["rows"]) == _final(expected["rows"])
    else:
        assert actual["rows"] == expected["rows"]
