"""A GROUP BY written to a JDBC upsert sink keyed by another column than its group key (the session's real
PostgreSQL server, `postgres` fixture): without the SinkUpsertMaterializer the retraction of a row the sink no
longer shows deletes the live row of its key, and the final table is wrong; with it (AUTO, Flink's default, and the
INSERT's ON CONFLICT DO DEDUPLICATE that Flink 2.3 asks for) the table ends right, at parallelism 2 too; so it does
with ON CONFLICT DO NOTHING, whose materializer judges each key at the end of input's watermark."""

from __future__ import annotations

import uuid

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment
from tests.integration.table.test_jdbc_table import execute

pytestmark = pytest.mark.timeout(90)


def run(postgres, target: str, parallelism: int, materialize: str, clause: str = "") -> list[tuple]:
    execute(postgres, f"CREATE TABLE {target} (cnt BIGINT PRIMARY KEY, k TEXT)")
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    t_env.get_config().set("table.exec.sink.upsert-materialize", materialize)
    # a reaches 1 then 2; b stays at 1: the sink's row for cnt = 1 must end as b
    t_env.execute_sql("CREATE TEMPORARY VIEW events AS SELECT * FROM (VALUES ('a'), ('b'), ('a')) AS e(k)")
    options = {"connector": "jdbc", "url": postgres.jdbc_url, "table-name": target, "username": "postgres"}
    with_options = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    t_env.execute_sql(
        f"CREATE TABLE counts (cnt BIGINT, k STRING, PRIMARY KEY (cnt) NOT ENFORCED) WITH ({with_options})"
    )
    t_env.execute_sql(f"INSERT INTO counts SELECT COUNT(*), k FROM events GROUP BY k {clause}").wait()
    return execute(postgres, fetch=f"SELECT * FROM {target} ORDER BY cnt")


def test_a_sink_keyed_by_another_column_ends_right_only_with_the_materializer(postgres):
    name = f"t_{uuid.uuid4().hex[:10]}"
    # a's -U (1, a) arrives after b's +I (1, b): an upsert sink deletes cnt = 1
    assert run(postgres, f"{name}_none", 1, "NONE") == [(2, "a")]
    assert run(postgres, f"{name}_auto", 2, "AUTO", "ON CONFLICT DO DEDUPLICATE") == [(1, "b"), (2, "a")]
    assert run(postgres, f"{name}_first", 2, "AUTO", "ON CONFLICT DO NOTHING") == [(1, "b"), (2, "a")]
