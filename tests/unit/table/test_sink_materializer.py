"""SinkUpsertMaterializer: per sink key, the rows alive, with retractions arriving out of order turned into
correct upserts and deletes; its state through a real snapshot and restore; the planner's choice
(`table.exec.sink.upsert-materialize`, upsert keys, the INSERT's ON CONFLICT clause, checked as PyFlink 2.3 checks
it) and its explain text as PyFlink 2.3 prints it; ON CONFLICT DO ERROR / DO NOTHING judged at the watermark."""

from __future__ import annotations

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table import EnvironmentSettings, TableEnvironment, ValidationException
from fluvial.table.runtime.conflict_materializer import ConflictError, WatermarkCompactingMaterializeFunction
from fluvial.table.runtime.functions import RowKeySelector
from fluvial.table.runtime.sink_materializer import SinkUpsertMaterializeFunction
from fluvial.testing.harness import OperatorHarness

NAMES = ["id", "name", "cnt"]  # the sink's key is `id`; the query's rows are (name, cnt) pairs


def row(kind: RowKind, *values) -> Row:
    return _create_row(NAMES, list(values), kind)


def harness(upsert_key=None, backend=None) -> OperatorHarness:
    function = SinkUpsertMaterializeFunction(NAMES, upsert_key)
    return OperatorHarness.of(lambda s: s.key_by(RowKeySelector((0,))).process(function), state_backend=backend)


def changes(values: list) -> list[tuple]:
    return [(v.get_row_kind().short_string(), *v) for v in values]


def test_a_retraction_of_a_row_the_sink_no_longer_shows_changes_nothing():
    h = harness().open()
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.INSERT, 1, "b", 1))  # another query row with the same sink key: shown now
    h.process_element(row(RowKind.UPDATE_BEFORE, 1, "a", 1))  # a's old row, retracted after b arrived
    h.process_element(row(RowKind.UPDATE_AFTER, 2, "a", 2))
    assert changes(h.take_values()) == [("+I", 1, "a", 1), ("+U", 1, "b", 1), ("+I", 2, "a", 2)]


def test_retracting_the_shown_row_shows_the_previous_one_and_the_last_retraction_deletes():
    h = harness().open()
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.INSERT, 1, "b", 1))
    h.process_element(row(RowKind.DELETE, 1, "b", 1))
    h.process_element(row(RowKind.DELETE, 1, "a", 1))
    h.process_element(row(RowKind.DELETE, 1, "a", 1))  # nothing left to retract: dropped
    h.process_element(row(RowKind.INSERT, 1, "c", 3))
    assert changes(h.take_values()) == [
        ("+I", 1, "a", 1),
        ("+U", 1, "b", 1),
        ("+U", 1, "a", 1),
        ("-D", 1, "a", 1),
        ("+I", 1, "c", 3),
    ]


def test_with_an_upsert_key_a_row_replaces_the_one_with_its_key():
    h = harness(upsert_key=(1,)).open()  # the input's changelog is keyed by name
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.INSERT, 1, "b", 1))
    h.process_element(row(RowKind.UPDATE_AFTER, 1, "a", 5))  # a's update without its -U: replaces a's row
    h.process_element(row(RowKind.DELETE, 1, "a", None))  # matched by name alone
    h.process_element(row(RowKind.DELETE, 1, "b", 1))
    assert changes(h.take_values()) == [
        ("+I", 1, "a", 1),
        ("+U", 1, "b", 1),
        ("+U", 1, "a", 5),
        ("+U", 1, "b", 1),
        ("-D", 1, "b", 1),
    ]


@pytest.mark.timeout(30)
def test_the_rows_alive_survive_a_snapshot_and_restore(backend):
    h = harness(backend=backend).open()
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.INSERT, 1, "b", 1))
    h.process_element(row(RowKind.INSERT, 2, "c", 2))
    snapshot = h.snapshot(checkpoint_id=1)
    h.close()
    restored = harness(backend=backend).open(restore=[snapshot])
    restored.process_element(row(RowKind.UPDATE_BEFORE, 1, "b", 1))
    restored.process_element(row(RowKind.DELETE, 2, "c", 2))
    assert changes(restored.take_values()) == [("+U", 1, "a", 1), ("-D", 2, "c", 2)]


# -- planning -----------------------------------------------------------------------------------------------------


def environment() -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql(
        "CREATE TABLE src (k STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'datagen')"
    )
    t_env.execute_sql("CREATE TABLE other (k STRING, w BIGINT) WITH ('connector' = 'datagen')")
    t_env.execute_sql(
        "CREATE TABLE by_total (total BIGINT, k STRING, PRIMARY KEY (total) NOT ENFORCED) WITH ('connector' = 'print')"
    )
    t_env.execute_sql(
        "CREATE TABLE by_k (k STRING, total BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'print')"
    )
    return t_env


def physical(t_env: TableEnvironment, statement: str) -> str:
    text = t_env.explain_sql(statement)
    return text.split("== Optimized Physical Plan ==\n", 1)[1].split("\n\n", 1)[0]


def sink_line(t_env: TableEnvironment, statement: str) -> str:
    return physical(t_env, statement).splitlines()[0]


def test_auto_asks_for_an_on_conflict_clause_when_the_query_is_not_keyed_by_the_sinks_key():
    t_env = environment()
    group_by_other = "INSERT INTO by_total SELECT SUM(v), k FROM src GROUP BY k"
    with pytest.raises(ValidationException, match=r"primary key: \[total\], upsert key: \[k\]\).*ON CONFLICT DO"):
        t_env.explain_sql(group_by_other)
    join = "INSERT INTO by_k SELECT s.k, o.w FROM src AS s LEFT JOIN other AS o ON s.v = o.w"
    with pytest.raises(ValidationException, match=r"upsert key: \[\]"):  # a join's upsert key is unknown
        t_env.explain_sql(join)
    # as PyFlink 2.3 prints it: the materializer is a term of the Sink node, not a node of its own
    plan = physical(t_env, group_by_other + " ON CONFLICT DO DEDUPLICATE").splitlines()
    assert plan[:2] == [
        "Sink(table=[default_catalog.default_database.by_total], fields=[total, k], upsertMaterialize=[true], "
        "conflictStrategy=[DEDUPLICATE])",
        "+- Calc(select=[EXPR$0 AS total, k])",
    ]
    assert "SinkMaterializer(pk=[total], conflictStrategy=[DEDUPLICATE])" in t_env.explain_sql(
        group_by_other + " on conflict do deduplicate;"
    )  # the JobGraph still names the operator
    # keyed by the sink's key: a GROUP BY on it, a deduplication partitioned by it, Top-1 on it; no clause needed
    for keyed in (
        "INSERT INTO by_k SELECT k, SUM(v) FROM src GROUP BY k",
        "INSERT INTO by_k SELECT k, w FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY w DESC) AS rn "
        "FROM other) WHERE rn = 1",
        "INSERT INTO by_total SELECT cnt, MAX(k) FROM (SELECT k, COUNT(*) AS cnt FROM src GROUP BY k) GROUP BY cnt",
    ):
        assert sink_line(t_env, keyed).endswith("fields=[k, total])" if "by_k" in keyed else "fields=[total, k])")
    assert sink_line(t_env, "INSERT INTO by_k SELECT k, SUM(v) FROM src GROUP BY k ON CONFLICT DO NOTHING") == (
        "Sink(table=[default_catalog.default_database.by_k], fields=[k, total], conflictStrategy=[NOTHING])"
    )  # keyed by the sink's key: the clause is kept, nothing materializes (PyFlink's plan)
    assert "upsertMaterialize" not in sink_line(t_env, "INSERT INTO by_total SELECT v, k FROM src")  # inserts only


def test_on_conflict_clauses_are_checked_when_planned():
    t_env = environment()
    t_env.execute_sql(
        "CREATE TABLE timed (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen')"
    )
    query = "INSERT INTO by_total SELECT SUM(v), k FROM {} GROUP BY k ON CONFLICT DO {}"
    for strategy in ("ERROR", "NOTHING"):  # both judge keys at the watermark: every source must declare one
        with pytest.raises(
            ValidationException,
            match=f"DO {strategy} needs every source table to declare a "
            "watermark, but default_catalog.default_database.src does not",
        ):
            t_env.explain_sql(query.format("src", strategy))
        assert sink_line(t_env, query.format("timed", strategy)).endswith(
            f"upsertMaterialize=[true], conflictStrategy=[{strategy}])"
        )
    with pytest.raises(ValidationException, match="DO UPDATE is not supported; use ON CONFLICT DO DEDUPLICATE"):
        t_env.explain_sql(query.format("src", "UPDATE"))
    with pytest.raises(ValidationException, match="only allowed for upsert sinks.*remove the clause"):
        t_env.explain_sql("INSERT INTO by_total SELECT v, k FROM src ON CONFLICT DO DEDUPLICATE")
    statements = t_env.create_statement_set()  # a statement set's INSERTs take the clause too
    statements.add_insert_sql(query.format("timed", "NOTHING"))
    assert "conflictStrategy=[NOTHING]" in statements.explain()


def test_force_none_and_a_bad_value():
    t_env = environment()
    t_env.get_config().set("table.exec.sink.upsert-materialize", "FORCE")
    assert sink_line(t_env, "INSERT INTO by_k SELECT k, SUM(v) FROM src GROUP BY k") == (
        "Sink(table=[default_catalog.default_database.by_k], fields=[k, total], upsertMaterialize=[true])"
    )
    assert "upsertMaterialize" not in sink_line(t_env, "INSERT INTO by_total SELECT v, k FROM src")
    t_env.execute_sql("SET 'table.exec.sink.upsert-materialize' = 'none'")  # no clause asked, none materializes
    assert "upsertMaterialize" not in sink_line(t_env, "INSERT INTO by_total SELECT SUM(v), k FROM src GROUP BY k")
    with pytest.raises(ValidationException, match="use AUTO, FORCE or NONE"):
        t_env.get_config().set("table.exec.sink.upsert-materialize", "ALWAYS")


# -- ON CONFLICT DO ERROR / DO NOTHING: judged at the watermark ---------------------------------------------------


def conflict_harness(error: bool, upsert_key=None) -> OperatorHarness:
    function = WatermarkCompactingMaterializeFunction(
        NAMES, (0,), "default_catalog.default_database.t", error, upsert_key
    )
    return OperatorHarness.of(lambda s: s.key_by(RowKeySelector((0,))).process(function)).open()


def test_do_nothing_keeps_the_first_row_and_waits_for_the_watermark():
    h = conflict_harness(error=False)
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.INSERT, 1, "b", 1))
    assert h.take_values() == []  # nothing before the watermark passes
    h.process_watermark(10)
    h.process_element(row(RowKind.UPDATE_BEFORE, 1, "a", 1))
    h.process_element(row(RowKind.UPDATE_AFTER, 1, "a", 2))  # a's update keeps a's place: still first
    h.process_element(row(RowKind.INSERT, 2, "c", 1))
    h.process_element(row(RowKind.DELETE, 2, "c", 1))  # born and gone between watermarks: never written
    h.process_watermark(20)
    h.process_element(row(RowKind.DELETE, 1, "a", 2))
    h.process_watermark(30)
    h.process_element(row(RowKind.DELETE, 1, "b", 1))
    h.process_final_watermark()
    assert changes(h.take_values()) == [("+I", 1, "a", 1), ("+U", 1, "a", 2), ("+U", 1, "b", 1), ("-D", 1, "b", 1)]


def test_do_error_fails_on_two_rows_alive_but_not_on_a_transient_one():
    h = conflict_harness(error=True, upsert_key=(1,))
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_watermark(10)
    h.process_element(row(RowKind.INSERT, 1, "b", 1))  # b reaches the key before a's retraction arrives
    h.process_element(row(RowKind.UPDATE_BEFORE, 1, "a", 1))
    h.process_watermark(20)  # compacted: b alone, no conflict
    assert changes(h.take_values()) == [("+I", 1, "a", 1), ("+U", 1, "b", 1)]
    h.process_element(row(RowKind.INSERT, 1, "c", 1))
    with pytest.raises(
        ConflictError,
        match=r"two different rows are alive for primary key \(id=1\) of sink table "
        "'default_catalog.default_database.t'",
    ):
        h.process_watermark(30)


def test_rows_expire_with_the_state_ttl():
    function = SinkUpsertMaterializeFunction(NAMES, None, state_ttl_millis=1000)
    h = OperatorHarness.of(lambda s: s.key_by(RowKeySelector((0,))).process(function)).open()
    now = [0]
    h.operator.keyed_backend.ttl_clock = lambda: now[0]  # state TTL's processing-time clock
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    now[0] = 5000
    h.process_element(row(RowKind.DELETE, 1, "a", 1))  # expired: nothing to retract
    h.process_element(row(RowKind.INSERT, 1, "b", 2))  # the key's first row again
    assert changes(h.take_values()) == [("+I", 1, "a", 1), ("+I", 1, "b", 2)]


@pytest.mark.timeout(60)
def test_a_conflict_under_do_error_fails_the_job_naming_the_key():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql("CREATE TEMPORARY VIEW events AS SELECT * FROM (VALUES ('a'), ('b')) AS e(k)")
    t_env.execute_sql(
        "CREATE TABLE counts (cnt BIGINT, k STRING, PRIMARY KEY (cnt) NOT ENFORCED) WITH ('connector' = 'blackhole')"
    )
    result = t_env.execute_sql("INSERT INTO counts SELECT COUNT(*), k FROM events GROUP BY k ON CONFLICT DO ERROR")
    with pytest.raises(
        Exception,
        match=r"ConflictError: ON CONFLICT DO ERROR: two different rows are alive for "
        r"primary key \(cnt=1\) of sink table 'default_catalog.default_database.counts'",
    ):
        result.wait()
