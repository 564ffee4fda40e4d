"""Planning event-time temporal joins: which tables are versioned (a declared key, an upsert source, a view that
deduplicates by event time) and the one-sentence errors, with their position, for what Flink refuses (the
results against PyFlink's are in the differential suite; the operator in test_temporal_join_runtime.py)."""

from __future__ import annotations

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment
from fluvial.table.errors import ValidationException

pytestmark = pytest.mark.timeout(60)

JOIN = "SELECT o.id, r.rate FROM orders AS o {} {} FOR SYSTEM_TIME AS OF o.{} AS r ON {}"


@pytest.fixture(scope="module")
def t_env() -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql(
        "CREATE TABLE orders (id INT, currency STRING, order_time TIMESTAMP(3), plain TIMESTAMP(3), "
        "WATERMARK FOR order_time AS order_time) WITH ('connector' = 'datagen')"
    )
    t_env.execute_sql(
        "CREATE TABLE rates_log (currency STRING, rate DOUBLE, rate_time TIMESTAMP(3), "
        "WATERMARK FOR rate_time AS rate_time) WITH ('connector' = 'datagen')"
    )
    t_env.execute_sql(
        "CREATE TABLE upsert_rates (currency STRING, rate DOUBLE, rate_time TIMESTAMP(3), "
        "WATERMARK FOR rate_time AS rate_time, PRIMARY KEY (currency) NOT ENFORCED) WITH ('connector' = "
        "'upsert-kafka', 'topic' = 'rates', 'properties.bootstrap.servers' = '127.0.0.1:9', 'key.format' = 'raw', "
        "'value.format' = 'json')"
    )
    t_env.execute_sql(
        "CREATE TABLE keyed_no_time (currency STRING, rate DOUBLE, PRIMARY KEY (currency) NOT ENFORCED) "
        "WITH ('connector' = 'datagen')"
    )
    t_env.execute_sql(
        "CREATE TEMPORARY VIEW rates AS SELECT currency, rate, rate_time FROM (SELECT *, ROW_NUMBER() OVER "
        "(PARTITION BY currency ORDER BY rate_time DESC) AS rn FROM rates_log) WHERE rn = 1"
    )
    return t_env


@pytest.mark.parametrize(
    "table, upstream",
    [("rates", "Deduplicate(keep=[LastRow], key=[currency])"), ("upsert_rates", "ChangelogNormalize(key=[currency])")],
)
def test_versioned_tables_plan_a_temporal_join(t_env, table: str, upstream: str) -> None:
    for side, kind in (("JOIN", "InnerJoin"), ("LEFT JOIN", "LeftOuterJoin")):
        query = JOIN.format(side, table, "order_time", "o.currency = r.currency AND r.rate > 1")
        explained = t_env.sql_query(query).explain()
        assert (
            f"TemporalJoin(joinType=[{kind}], where=[AND(=(currency, currency0), __TEMPORAL_JOIN_CONDITION("
            "order_time, rate_time, __TEMPORAL_JOIN_CONDITION_PRIMARY_KEY(currency0), __TEMPORAL_JOIN_LEFT_KEY("
            "currency), __TEMPORAL_JOIN_RIGHT_KEY(currency0)), >(rate, 1))]"
        ) in explained
        assert upstream in explained


@pytest.mark.parametrize(
    "side, table, time, on, message",
    [
        ("JOIN", "rates_log", "order_time", "o.currency = r.currency", "'rates_log' has no primary key"),
        ("JOIN", "keyed_no_time", "order_time", "o.currency = r.currency", "'keyed_no_time' has no event-time"),
        ("RIGHT JOIN", "rates", "order_time", "o.currency = r.currency", "a temporal join is INNER or LEFT"),
        ("JOIN", "rates", "order_time", "o.id = r.rate", "primary key [currency], so the temporal join's ON needs"),
        ("JOIN", "rates", "plain", "o.currency = r.currency", "AS OF plain is not a time attribute"),
    ],
)
def test_what_flink_refuses_is_refused_with_its_position(t_env, side, table, time, on, message) -> None:
    with pytest.raises(ValidationException, match=r"From line 1, column \d+: .*" + message.replace("[", r"\[")):
        t_env.sql_query(JOIN.format(side, table, time, on))
