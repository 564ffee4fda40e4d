"""The differential suite's queries: each runs on fluvial and was run on PyFlink 2.3 (`record_pyflink.py`),
whose results are kept in `expected.json` so the suite runs without Java.

This module is plain data (no fluvial import): the recorder imports it inside PyFlink's venv. Tables are CSV
files written from `TABLES` into a temporary directory; `{dir}` in a DDL is that directory. Every query
runs at parallelism 1, so a changelog's order is deterministic; window results, whose order inside one
firing is the engines' own business, compare as multisets (`compare="set"`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Case", "CASES", "TABLES"]


@dataclass(frozen=True)
class Case:
    id: str
    query: str
    compare: str = "changelog"  # or "set" (a multiset of changes), or "final" (the changelog applied)
    tables: tuple[str, ...] = ("orders",)
    setup: tuple[str, ...] = ()  # statements before the query, run with python.files naming diff_udfs.py


ORDERS_CSV = """\
1,alice,10.5,2,2024-01-01 00:00:01.000,books
2,bob,20.0,1,2024-01-01 00:00:02.000,games
3,alice,5.25,4,2024-01-01 00:00:03.500,books
4,carol,null,3,2024-01-01 00:00:04.000,toys
5,bob,7.75,null,2024-01-01 00:00:06.000,books
6,dave,100.0,1,2024-01-01 00:00:07.250,games
7,alice,3.0,5,2024-01-01 00:00:09.999,toys
8,carol,42.0,2,2024-01-01 00:00:11.000,books
9,bob,0.5,7,2024-01-01 00:00:12.000,null
10,erin,-4.0,1,2024-01-01 00:00:15.000,toys
"""

CUSTOMERS_CSV = """\
alice,Berlin,3
bob,Paris,1
carol,Berlin,2
zoe,Rome,5
"""

WORDS_CSV = """\
hello world,1
Hello Flink,2
  padded  ,3
,4
flink-sql streaming,5
a_b%c,6
"""

# Out of order: rows behind the watermark (the largest ts so far minus 1 s) are late; two rows share a time.
EVENTS_CSV = """\
a,1,2024-01-01 00:00:01.000
b,2,2024-01-01 00:00:01.500
a,3,2024-01-01 00:00:02.500
b,4,2024-01-01 00:00:06.000
b,5,2024-01-01 00:00:06.000
a,6,2024-01-01 00:00:03.000
a,7,2024-01-01 00:00:05.500
c,8,2024-01-01 00:00:04.800
b,9,2024-01-01 00:00:12.000
a,10,2024-01-01 00:00:07.000
a,11,2024-01-01 00:00:11.500
c,12,2024-01-01 00:00:20.000
"""

# A changelog of customers' tiers in event time (versioned by the views and the key below); in time order, so
# no left row is late and the result does not depend on when the watermarks come.
TIERS_CSV = """\
alice,1,2024-01-01 00:00:00.000
bob,1,2024-01-01 00:00:00.500
alice,2,2024-01-01 00:00:03.000
carol,5,2024-01-01 00:00:05.000
bob,3,2024-01-01 00:00:06.500
alice,3,2024-01-01 00:00:10.000
"""

TABLES = {
    "orders": (
        "CREATE TABLE orders (id INT, customer STRING, amount DOUBLE, qty INT, ts TIMESTAMP(3), category STRING, "
        "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = "
        "'{dir}/orders.csv', 'format' = 'csv', 'csv.null-literal' = 'null')",
        "orders.csv",
        ORDERS_CSV,
    ),
    "customers": (
        "CREATE TABLE customers (name STRING, city STRING, tier INT) WITH ('connector' = 'filesystem', 'path' = "
        "'{dir}/customers.csv', 'format' = 'csv')",
        "customers.csv",
        CUSTOMERS_CSV,
    ),
    "events": (
        "CREATE TABLE events (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
        "WITH ('connector' = 'filesystem', 'path' = '{dir}/events.csv', 'format' = 'csv')",
        "events.csv",
        EVENTS_CSV,
    ),
    "orders_pt": (
        "CREATE TABLE orders_pt (id INT, customer STRING, amount DOUBLE, qty INT, ts TIMESTAMP(3), category STRING, "
        "p AS PROCTIME()) WITH ('connector' = 'filesystem', 'path' = '{dir}/orders.csv', 'format' = 'csv', "
        "'csv.null-literal' = 'null')",
        "orders.csv",
        ORDERS_CSV,
    ),
    "tiers": (
        "CREATE TABLE tiers (name STRING, tier INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = "
        "'filesystem', 'path' = '{dir}/tiers.csv', 'format' = 'csv')",
        "tiers.csv",
        TIERS_CSV,
    ),
    "tiers_pk": (
        "CREATE TABLE tiers_pk (name STRING, tier INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts, PRIMARY KEY (name) "
        "NOT ENFORCED) WITH ('connector' = 'filesystem', 'path' = '{dir}/tiers.csv', 'format' = 'csv')",
        "tiers.csv",
        TIERS_CSV,
    ),
    "words": (
        "CREATE TABLE words (line STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{dir}/words.csv', "
        "'format' = 'csv')",
        "words.csv",
        WORDS_CSV,
    ),
}


def _c(
    id: str, query: str, compare: str = "changelog", tables: tuple[str, ...] = ("orders",), setup: tuple[str, ...] = ()
) -> Case:
    return Case(id, query, compare, tables, setup)


def _function(scope: str, name: str, obj: str) -> tuple[str, ...]:
    """The setup that creates diff_udfs.`obj` as `name` by DDL (scope: '', 'TEMPORARY' or 'TEMPORARY SYSTEM')."""
    return (f"CREATE {scope} FUNCTION {name} AS 'diff_udfs.{obj}' LANGUAGE PYTHON".replace("  ", " "),)


_W = ("words",)
_PT = ("orders_pt",)
_E = ("events",)
_J = ("orders", "customers")
_SPLIT = _function("TEMPORARY", "split_words", "split_words")

CASES: list[Case] = [
    # -- projection and arithmetic ---------------------------------------------------------------------------
    _c("select_star", "SELECT * FROM orders"),
    _c("select_columns", "SELECT id, customer FROM orders"),
    _c("select_alias", "SELECT id AS order_id, customer AS who FROM orders"),
    _c("plus_int", "SELECT id + 1, id - 1, id * 2 FROM orders"),
    _c("int_division", "SELECT id / 3, id % 3, MOD(id, 4) FROM orders"),
    _c("double_arith", "SELECT amount * 2, amount + 0.5, amount / 4 FROM orders"),
    _c("mixed_arith", "SELECT id * amount, qty + amount FROM orders"),
    _c("negate", "SELECT -id, -amount FROM orders"),
    _c("literals", "SELECT 1, 'x', TRUE, 2.5, 1e3 FROM orders WHERE id = 1"),
    _c("decimal_literal_math", "SELECT 1.5 + 2.25, 10 / 4, 10.0 / 4 FROM orders WHERE id = 1"),
    _c("null_arith", "SELECT amount + qty, qty * 2 FROM orders"),
    _c("abs_sign", "SELECT ABS(amount), SIGN(amount), ABS(id - 5) FROM orders"),
    _c("round_floor_ceil", "SELECT ROUND(amount, 1), FLOOR(amount), CEIL(amount) FROM orders"),
    _c("power_sqrt", "SELECT POWER(id, 2), SQRT(CAST(id AS DOUBLE)) FROM orders"),
    _c(
        "ln_exp",
        "SELECT LN(CAST(id AS DOUBLE)), EXP(CAST(0 AS DOUBLE)), LOG10(CAST(100 AS DOUBLE)) FROM orders WHERE id < 3",
    ),
    # -- comparison and logic --------------------------------------------------------------------------------
    _c("where_eq", "SELECT id FROM orders WHERE customer = 'alice'"),
    _c("where_ne", "SELECT id FROM orders WHERE customer <> 'alice'"),
    _c("where_lt_gt", "SELECT id FROM orders WHERE amount > 5 AND amount < 50"),
    _c("where_le_ge", "SELECT id FROM orders WHERE qty >= 2 AND qty <= 4"),
    _c("where_or", "SELECT id FROM orders WHERE customer = 'dave' OR qty > 4"),
    _c("where_not", "SELECT id FROM orders WHERE NOT (customer = 'bob')"),
    _c("where_null_cmp", "SELECT id FROM orders WHERE amount > 0"),
    _c("where_is_null", "SELECT id FROM orders WHERE amount IS NULL"),
    _c("where_is_not_null", "SELECT id FROM orders WHERE qty IS NOT NULL"),
    _c("where_in", "SELECT id FROM orders WHERE customer IN ('alice', 'erin')"),
    _c("where_not_in", "SELECT id FROM orders WHERE customer NOT IN ('alice', 'erin')"),
    _c("where_between", "SELECT id FROM orders WHERE amount BETWEEN 5 AND 20"),
    _c("where_not_between", "SELECT id FROM orders WHERE id NOT BETWEEN 3 AND 8"),
    _c("where_like", "SELECT id FROM orders WHERE customer LIKE 'a%'"),
    _c("where_like_underscore", "SELECT id FROM orders WHERE customer LIKE '_ob'"),
    _c("where_not_like", "SELECT id FROM orders WHERE customer NOT LIKE '%o%'"),
    _c("where_false", "SELECT id FROM orders WHERE 1 = 2"),
    _c("where_null_category", "SELECT id, category FROM orders WHERE category IS NULL"),
    _c("boolean_columns", "SELECT id, amount > 10, qty IS NULL FROM orders"),
    _c("three_valued_and", "SELECT id, amount > 10 AND qty > 1 FROM orders"),
    _c("three_valued_or", "SELECT id, amount > 10 OR qty > 1 FROM orders"),
    _c("is_true_false", "SELECT id, (amount > 10) IS TRUE, (amount > 10) IS NOT FALSE FROM orders"),
    # -- strings ------------------------------------------------------------------------------------------------
    _c("upper_lower", "SELECT UPPER(line), LOWER(line) FROM words", tables=_W),
    _c("char_length", "SELECT line, CHAR_LENGTH(line) FROM words", tables=_W),
    _c("concat_op", "SELECT line || '!' FROM words", tables=_W),
    _c("concat_fn", "SELECT CONCAT(line, '-', CAST(n AS STRING)) FROM words", tables=_W),
    _c("concat_ws", "SELECT CONCAT_WS('|', line, 'x') FROM words", tables=_W),
    _c("substring_from_for", "SELECT SUBSTRING(line FROM 2 FOR 3) FROM words", tables=_W),
    _c("substring_fn", "SELECT SUBSTRING(line, 3) FROM words", tables=_W),
    _c("trim_both", "SELECT TRIM(line) FROM words", tables=_W),
    _c(
        "trim_leading_trailing",
        "SELECT TRIM(LEADING ' ' FROM line), TRIM(TRAILING ' ' FROM line) FROM words",
        tables=_W,
    ),
    _c("replace", "SELECT REPLACE(line, 'l', 'L') FROM words", tables=_W),
    _c("position", "SELECT POSITION('l' IN line) FROM words", tables=_W),
    _c("lpad_rpad", "SELECT LPAD(line, 12, '*'), RPAD(line, 12, '*') FROM words", tables=_W),
    _c("initcap", "SELECT INITCAP(line) FROM words", tables=_W),
    _c("regexp_replace", "SELECT REGEXP_REPLACE(line, '[aeiou]', '#') FROM words", tables=_W),
    _c("regexp_extract", "SELECT REGEXP_EXTRACT(line, '([a-z]+)-([a-z]+)', 2) FROM words", tables=_W),
    _c("like_escape_chars", "SELECT line FROM words WHERE line LIKE '%\\_%' ESCAPE '\\'", tables=_W),
    _c("string_compare", "SELECT line FROM words WHERE line > 'flink'", tables=_W),
    _c("repeat_reverse", "SELECT REPEAT('ab', CAST(n AS INT)), REVERSE(line) FROM words WHERE n < 3", tables=_W),
    _c("split_index", "SELECT SPLIT_INDEX(line, ' ', 1) FROM words", tables=_W),
    _c("md5", "SELECT MD5(line) FROM words WHERE n = 1", tables=_W),
    _c("to_base64", "SELECT TO_BASE64(line) FROM words WHERE n < 3", tables=_W),
    _c("left_right", "SELECT LEFT(line, 3), RIGHT(line, 3) FROM words", tables=_W),
    _c("char_length_where", "SELECT n FROM words WHERE CHAR_LENGTH(line) > 10", tables=_W),
    # -- conditional --------------------------------------------------------------------------------------------
    _c(
        "case_searched",
        "SELECT id, CASE WHEN amount > 20 THEN 'big' WHEN amount > 5 THEN 'mid' ELSE 'small' END FROM orders",
    ),
    _c("case_simple", "SELECT id, CASE customer WHEN 'alice' THEN 1 WHEN 'bob' THEN 2 ELSE 0 END FROM orders"),
    _c("case_no_else", "SELECT id, CASE WHEN qty > 3 THEN qty END FROM orders"),
    _c("coalesce", "SELECT id, COALESCE(amount, 0), COALESCE(category, 'none') FROM orders"),
    _c("if_fn", "SELECT id, IF(qty > 2, 'many', 'few') FROM orders"),
    _c("nullif", "SELECT id, NULLIF(customer, 'bob') FROM orders"),
    _c("greatest_least", "SELECT id, GREATEST(id, qty), LEAST(id, qty) FROM orders"),
    # -- casts ----------------------------------------------------------------------------------------------------
    _c("cast_to_string", "SELECT CAST(id AS STRING), CAST(amount AS STRING) FROM orders"),
    _c("cast_to_bigint", "SELECT CAST(amount AS BIGINT), CAST(id AS BIGINT) FROM orders"),
    _c("cast_to_double", "SELECT CAST(id AS DOUBLE), CAST(qty AS DOUBLE) FROM orders"),
    _c("cast_string_to_int", "SELECT CAST(CAST(n AS STRING) AS INT) + 1 FROM words", tables=_W),
    _c("cast_decimal", "SELECT CAST(amount AS DECIMAL(10, 2)) FROM orders"),
    _c("cast_timestamp_string", "SELECT CAST(ts AS STRING) FROM orders"),
    _c("cast_boolean_string", "SELECT CAST(amount > 10 AS STRING) FROM orders"),
    _c("try_cast_bad", "SELECT TRY_CAST(line AS INT) FROM words", tables=_W),
    # -- temporal -------------------------------------------------------------------------------------------------
    _c("timestamp_column", "SELECT id, ts FROM orders"),
    _c("timestamp_plus_interval", "SELECT id, ts + INTERVAL '1' MINUTE FROM orders WHERE id < 4"),
    _c("timestamp_minus_interval", "SELECT id, ts - INTERVAL '2' HOUR FROM orders WHERE id < 4"),
    _c("extract_fields", "SELECT EXTRACT(YEAR FROM ts), EXTRACT(MONTH FROM ts), EXTRACT(SECOND FROM ts) FROM orders"),
    _c("hour_minute_second", "SELECT HOUR(ts), MINUTE(ts), SECOND(ts) FROM orders WHERE id < 4"),
    _c("date_format", "SELECT DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') FROM orders WHERE id < 4"),
    _c("cast_ts_date", "SELECT CAST(ts AS DATE) FROM orders WHERE id = 1"),
    _c("timestamp_compare", "SELECT id FROM orders WHERE ts > TIMESTAMP '2024-01-01 00:00:07'"),
    _c("floor_ts_minute", "SELECT FLOOR(ts TO MINUTE) FROM orders WHERE id = 2"),
    _c("date_literal", "SELECT DATE '2024-02-29', TIMESTAMP '2024-01-01 12:00:00' FROM orders WHERE id = 1"),
    # -- aggregates with retractions ----------------------------------------------------------------------------
    _c("group_count", "SELECT customer, COUNT(*) FROM orders GROUP BY customer"),
    _c("group_count_alias", "SELECT customer, COUNT(*) AS cnt FROM orders GROUP BY customer"),
    _c("group_sum_int", "SELECT customer, SUM(qty) FROM orders GROUP BY customer"),
    _c("group_sum_double", "SELECT customer, SUM(amount) FROM orders GROUP BY customer"),
    _c("group_avg_int", "SELECT customer, AVG(qty) FROM orders GROUP BY customer"),
    _c("group_avg_double", "SELECT customer, AVG(amount) FROM orders GROUP BY customer"),
    _c("group_min_max", "SELECT customer, MIN(amount), MAX(amount) FROM orders GROUP BY customer"),
    _c("group_count_column_nulls", "SELECT category, COUNT(amount), COUNT(qty) FROM orders GROUP BY category"),
    _c("group_count_distinct", "SELECT category, COUNT(DISTINCT customer) FROM orders GROUP BY category"),
    _c("group_sum_distinct", "SELECT customer, SUM(DISTINCT qty) FROM orders GROUP BY customer"),
    _c("group_multi_key", "SELECT customer, category, COUNT(*) FROM orders GROUP BY customer, category"),
    _c("group_expression_key", "SELECT UPPER(customer), COUNT(*) FROM orders GROUP BY UPPER(customer)"),
    _c("group_key_expression_select", "SELECT customer, COUNT(*) * 10, SUM(qty) + 1 FROM orders GROUP BY customer"),
    _c("global_count", "SELECT COUNT(*) FROM orders"),
    _c("global_sum_avg", "SELECT SUM(amount), AVG(amount), MIN(qty), MAX(qty) FROM orders"),
    _c("global_count_empty", "SELECT COUNT(*) FROM orders WHERE id > 100"),
    _c("having", "SELECT customer, SUM(qty) FROM orders GROUP BY customer HAVING SUM(qty) > 5"),
    _c("having_count", "SELECT category, COUNT(*) AS c FROM orders GROUP BY category HAVING COUNT(*) >= 3"),
    _c("where_then_group", "SELECT customer, COUNT(*) FROM orders WHERE amount > 5 GROUP BY customer"),
    _c("group_null_key", "SELECT category, SUM(qty) FROM orders GROUP BY category"),
    _c(
        "nested_agg_retract",
        "SELECT cnt, COUNT(*) FROM (SELECT customer, COUNT(*) AS cnt FROM orders GROUP BY customer) GROUP BY cnt",
    ),
    _c("nested_agg_sum", "SELECT SUM(s) FROM (SELECT customer, SUM(qty) AS s FROM orders GROUP BY customer)"),
    _c(
        "filter_after_agg",
        "SELECT customer, c FROM (SELECT customer, COUNT(*) AS c FROM orders GROUP BY customer) WHERE c > 1",
    ),
    _c(
        "project_after_agg",
        "SELECT customer, c * 2 FROM (SELECT customer, COUNT(*) AS c FROM orders GROUP BY customer)",
    ),
    _c("max_string", "SELECT category, MAX(customer), MIN(customer) FROM orders GROUP BY category"),
    _c("sum_of_expression", "SELECT customer, SUM(amount * qty) FROM orders GROUP BY customer"),
    _c("count_if_case", "SELECT customer, SUM(CASE WHEN amount > 5 THEN 1 ELSE 0 END) FROM orders GROUP BY customer"),
    _c(
        "agg_words",
        "SELECT CHAR_LENGTH(line) > 5, COUNT(*), SUM(n) FROM words GROUP BY CHAR_LENGTH(line) > 5",
        tables=_W,
    ),
    _c("distinct_customers", "SELECT DISTINCT customer FROM orders"),
    _c("distinct_two_columns", "SELECT DISTINCT customer, category FROM orders"),
    _c("count_distinct_global", "SELECT COUNT(DISTINCT category) FROM orders"),
    _c("stddev_var", "SELECT category, STDDEV_POP(amount), VAR_POP(amount) FROM orders GROUP BY category"),
    # -- union, limit, values, subqueries -----------------------------------------------------------------------
    _c(
        "union_all",
        "SELECT id, customer FROM orders WHERE id < 3 UNION ALL SELECT id, customer FROM orders WHERE id > 8",
        "set",
    ),
    _c(
        "union_all_three",
        "SELECT id FROM orders WHERE id = 1 UNION ALL SELECT id FROM orders WHERE id = 2 UNION ALL SELECT id FROM orders WHERE id = 3",
        "set",
    ),
    _c(
        "union_distinct",
        "SELECT customer FROM orders UNION SELECT category FROM orders WHERE category IS NOT NULL",
        "set",  # two scans of one file interleave as they like (each flushes at its watermarks)
    ),
    _c("limit", "SELECT id FROM orders LIMIT 3"),
    _c("limit_offset", "SELECT id FROM orders LIMIT 3 OFFSET 2"),
    _c("values", "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(x, y)", tables=()),
    _c("values_agg", "SELECT y, SUM(x) FROM (VALUES (1, 'a'), (2, 'b'), (3, 'a')) AS t(x, y) GROUP BY y", tables=()),
    _c("subquery_projection", "SELECT x + 1 FROM (SELECT id * 2 AS x FROM orders)"),
    _c("subquery_filter", "SELECT * FROM (SELECT id, amount FROM orders WHERE amount IS NOT NULL) WHERE amount < 10"),
    _c("select_no_from", "SELECT 1 + 1, 'a' || 'b', UPPER('x')", tables=()),
    # -- event-time windows -----------------------------------------------------------------------------------
    _c(
        "tumble_count",
        "SELECT window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "tumble_by_customer",
        "SELECT window_start, customer, SUM(amount) AS total FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end, customer",
        "set",
    ),
    _c(
        "tumble_window_time",
        "SELECT window_start, window_end, window_time, MAX(qty) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '4' SECOND)) GROUP BY window_start, window_end, window_time",
        "set",
    ),
    _c(
        "tumble_avg_min",
        "SELECT window_end, AVG(amount), MIN(amount), COUNT(amount) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "tumble_filter",
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND)) WHERE category = 'books' GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "tumble_count_distinct",
        "SELECT window_start, COUNT(DISTINCT customer) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "tumble_having",
        "SELECT window_start, customer, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, customer HAVING COUNT(*) > 1",
        "set",
    ),
    _c(
        "tumble_expression_on_agg",
        "SELECT window_start, SUM(qty) * 2, CAST(COUNT(*) AS STRING) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "tumble_one_minute",
        "SELECT window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "hop_count",
        "SELECT window_start, window_end, COUNT(*) FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "hop_sum_by_category",
        "SELECT window_start, category, SUM(qty) FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY window_start, window_end, category",
        "set",
    ),
    _c(
        "hop_max",
        "SELECT window_end, MAX(amount) FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '3' SECOND, INTERVAL '6' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "cumulate_count",
        "SELECT window_start, window_end, COUNT(*) FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '8' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "cumulate_sum_by_customer",
        "SELECT window_start, window_end, customer, SUM(qty) FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '4' SECOND, INTERVAL '8' SECOND)) GROUP BY window_start, window_end, customer",
        "set",
    ),
    _c(
        "window_then_filter",
        "SELECT * FROM (SELECT window_start, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end) WHERE c > 2",
        "set",
    ),
    _c(
        "window_then_group",
        "SELECT c, COUNT(*) FROM (SELECT window_start, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '4' SECOND)) GROUP BY window_start, window_end) GROUP BY c",
        "set",
    ),
    # -- regular joins (two sources interleave as they like: compare the multiset or the final table) ---------
    _c("join_inner", "SELECT o.id, c.city FROM orders o JOIN customers c ON o.customer = c.name", "set", _J),
    _c(
        "join_inner_condition",
        "SELECT o.id, c.name, c.tier FROM orders o JOIN customers c ON o.customer = c.name AND o.qty > c.tier",
        "set",
        _J,
    ),
    _c("join_left", "SELECT o.id, c.city FROM orders o LEFT JOIN customers c ON o.customer = c.name", "final", _J),
    _c("join_right", "SELECT o.id, c.name FROM orders o RIGHT JOIN customers c ON o.customer = c.name", "final", _J),
    _c(
        "join_full", "SELECT o.id, c.name FROM orders o FULL OUTER JOIN customers c ON o.customer = c.name", "final", _J
    ),
    _c(
        "join_then_group",
        "SELECT c.city, SUM(o.amount) FROM orders o JOIN customers c ON o.customer = c.name GROUP BY c.city",
        "final",
        _J,
    ),
    _c(
        "join_where",
        "SELECT o.id, c.city FROM orders o JOIN customers c ON o.customer = c.name WHERE c.city = 'Berlin'",
        "set",
        _J,
    ),
    _c("join_select_star", "SELECT * FROM customers c JOIN orders o ON c.name = o.customer WHERE o.id < 4", "set", _J),
    # -- interval joins (both rowtimes bounded against each other: insert-only, time attributes kept) ----------
    _c(
        "interval_join_between",
        "SELECT a.id, b.id AS other, a.ts, b.ts AS other_ts FROM orders a JOIN orders b ON a.customer = b.customer "
        "AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '3' SECOND",
        "set",
    ),
    _c(
        "interval_join_strict_bounds",
        "SELECT a.id, b.id FROM orders a JOIN orders b ON a.category = b.category AND a.ts > b.ts "
        "AND a.ts < b.ts + INTERVAL '5' SECOND AND a.amount > b.amount",
        "set",
    ),
    _c(
        "interval_join_left_outer",
        "SELECT a.id, b.id FROM orders a LEFT JOIN orders b ON a.customer = b.customer AND a.id <> b.id "
        "AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '4' SECOND",
        "set",
    ),
    _c(
        "interval_join_full_outer",
        "SELECT a.id, b.id FROM orders a FULL JOIN orders b ON a.qty = b.qty AND a.id < b.id "
        "AND a.ts >= b.ts - INTERVAL '3' SECOND AND a.ts <= b.ts",
        "set",
    ),
    # -- window table functions as tables, and window joins (per key and window, at the watermark) ------------
    _c(
        "window_tvf_hop_rows",
        "SELECT id, window_start, window_end, window_time FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), "
        "INTERVAL '2' SECOND, INTERVAL '4' SECOND))",
        "set",
    ),
    _c(
        "window_join_inner",
        "SELECT L.id, R.id, L.window_start, L.window_end FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))) L JOIN "
        "(SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))) R ON L.customer = R.customer AND L.window_start = R.window_start "
        "AND L.window_end = R.window_end AND L.id < R.id",
        "set",
    ),
    _c(
        "window_join_full_outer",
        "SELECT L.id, R.id, COALESCE(L.window_start, R.window_start) AS ws FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))) L FULL JOIN "
        "(SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))) R ON L.category = R.category AND L.window_start = R.window_start "
        "AND L.window_end = R.window_end AND L.id < R.id",
        "set",
    ),
    _c(
        "window_join_select_star",
        "SELECT * FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))) L JOIN (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))) R ON L.id = R.id AND L.window_start = R.window_start "
        "AND L.window_end = R.window_end",
        "set",
    ),
    # -- deduplication (ROW_NUMBER() = 1 by event time) -------------------------------------------------------
    _c(
        "dedup_first",
        "SELECT id, customer, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY ts) AS rn FROM orders) WHERE rn = 1",
    ),
    _c(
        "dedup_last",
        "SELECT id, customer, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY ts DESC) AS rn FROM orders) WHERE rn = 1",
    ),
    _c(
        "dedup_by_category",
        "SELECT category, id FROM (SELECT id, category, ts, ROW_NUMBER() OVER (PARTITION BY category ORDER BY ts) AS rn FROM orders) WHERE rn = 1",
    ),
    # -- Top-N (ROW_NUMBER() <= N over inserts) -------------------------------------------------------------
    _c(
        "topn_per_customer",
        "SELECT customer, amount FROM (SELECT customer, amount, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY amount DESC) AS rn FROM orders) WHERE rn <= 2",
    ),
    _c(
        "topn_with_rank",
        "SELECT customer, amount, rn FROM (SELECT customer, amount, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY amount DESC) AS rn FROM orders) WHERE rn <= 2",
    ),
    _c(
        "topn_global",
        "SELECT id, qty FROM (SELECT id, qty, ROW_NUMBER() OVER (ORDER BY qty DESC) AS rn FROM orders) WHERE rn <= 3",
    ),
    _c(
        "topn_ascending_lt",
        "SELECT * FROM (SELECT id, category, ROW_NUMBER() OVER (PARTITION BY category ORDER BY id) AS rn FROM orders) WHERE rn < 3",
    ),
    # -- Top-N over an aggregation (RetractStrategy: rows move as their aggregates change; final tables) -------
    _c(
        "topn_over_count_with_rank",
        "SELECT category, customer, cnt, rn FROM (SELECT category, customer, cnt, ROW_NUMBER() OVER (PARTITION BY category ORDER BY cnt DESC, customer) AS rn FROM (SELECT category, customer, COUNT(*) AS cnt FROM orders GROUP BY category, customer)) WHERE rn <= 2",
        "final",
    ),
    _c(
        "topn_over_sum_global",
        "SELECT customer, total FROM (SELECT customer, total, ROW_NUMBER() OVER (ORDER BY total DESC) AS rn FROM (SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer)) WHERE rn <= 3",
        "final",
    ),
    _c(
        "topn_over_min_ascending",
        "SELECT * FROM (SELECT customer, low, ROW_NUMBER() OVER (ORDER BY low) AS rn FROM (SELECT customer, MIN(amount) AS low FROM orders GROUP BY customer)) WHERE rn < 3",
        "final",
    ),
    _c(
        "topn_over_count_ties",
        "SELECT category, customer, cnt FROM (SELECT category, customer, cnt, ROW_NUMBER() OVER (PARTITION BY category ORDER BY cnt DESC) AS rn FROM (SELECT category, customer, COUNT(*) AS cnt FROM orders GROUP BY category, customer)) WHERE rn <= 2",
        "final",
    ),
    _c(
        "topn_one_over_max",
        "SELECT * FROM (SELECT category, customer, top_qty, ROW_NUMBER() OVER (PARTITION BY category ORDER BY top_qty DESC, customer) AS rn FROM (SELECT category, customer, MAX(qty) AS top_qty FROM orders GROUP BY category, customer)) WHERE rn = 1",
        "final",
    ),
    _c(
        "topn_over_join_deletes",
        "SELECT * FROM (SELECT city, id, amount, ROW_NUMBER() OVER (PARTITION BY city ORDER BY amount DESC) AS rn FROM (SELECT c.city, o.id, o.amount FROM orders o LEFT JOIN customers c ON o.customer = c.name)) WHERE rn <= 2",
        "final",
        _J,
    ),
    # -- OVER aggregation (event time, UNBOUNDED PRECEDING to CURRENT ROW) ---------------------------------------
    _c(
        "over_rows_sum",
        "SELECT id, customer, SUM(amount) OVER (PARTITION BY customer ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_total FROM orders",
        "set",
    ),
    _c(
        "over_range_count",
        "SELECT id, COUNT(*) OVER (PARTITION BY category ORDER BY ts) AS n, MAX(qty) OVER (PARTITION BY category ORDER BY ts) FROM orders",
        "set",
    ),
    _c(
        "over_global_avg",
        "SELECT id, AVG(amount) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM orders",
        "set",
    ),
    # -- SESSION windows (window TVF, with and without PARTITION BY; late rows) ------------------------------
    _c(
        "session_global",
        "SELECT window_start, window_end, COUNT(*), SUM(qty) FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "session_partition_by",
        "SELECT customer, window_start, window_end, COUNT(*), SUM(amount) FROM TABLE(SESSION(TABLE orders PARTITION BY customer, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY customer, window_start, window_end",
        "set",
    ),
    _c(
        "session_group_key_no_partition",
        "SELECT category, window_start, window_end, COUNT(*) FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY category, window_start, window_end",
        "set",
    ),
    _c(
        "session_window_time",
        "SELECT customer, window_start, window_end, window_time, MAX(qty), MIN(amount) FROM TABLE(SESSION(TABLE orders PARTITION BY customer, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY customer, window_start, window_end, window_time",
        "set",
    ),
    _c(
        "session_minutes_plural",
        "SELECT window_start, window_end, COUNT(DISTINCT customer) FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTES)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "session_having_filter",
        "SELECT customer, window_start, COUNT(*) FROM TABLE(SESSION(TABLE orders PARTITION BY customer, DESCRIPTOR(ts), INTERVAL '5' SECOND)) WHERE amount IS NOT NULL GROUP BY customer, window_start, window_end HAVING COUNT(*) > 1",
        "set",
    ),
    _c(
        "session_two_partition_keys",
        "SELECT customer, category, window_start, window_end, SUM(qty) FROM TABLE(SESSION(TABLE orders PARTITION BY (customer, category), DESCRIPTOR(ts), INTERVAL '4' SECOND)) GROUP BY customer, category, window_start, window_end",
        "set",
    ),
    _c(
        "session_partition_not_grouped",
        "SELECT window_start, window_end, COUNT(*) FROM TABLE(SESSION(TABLE orders PARTITION BY customer, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end",
        "set",
    ),
    _c(
        "session_late_rows",
        "SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM TABLE(SESSION(TABLE events PARTITION BY k, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY k, window_start, window_end",
        "set",
        _E,
    ),
    _c(
        "session_merging_late_bridge",
        "SELECT window_start, window_end, COUNT(*), MAX(v) FROM TABLE(SESSION(TABLE events, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end",
        "set",
        _E,
    ),
    _c(
        "tumble_late_rows",
        "SELECT k, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '4' SECOND)) GROUP BY k, window_start, window_end",
        "set",
        _E,
    ),
    # -- OVER aggregation with bounded frames -----------------------------------------------------------------
    _c(
        "over_rows_bounded_sum",
        "SELECT id, customer, SUM(amount) OVER (PARTITION BY customer ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM orders",
        "set",
    ),
    _c(
        "over_rows_bounded_global",
        "SELECT id, COUNT(*) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), MIN(qty) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM orders",
        "set",
    ),
    _c(
        "over_rows_bounded_avg_max",
        "SELECT id, AVG(amount) OVER (PARTITION BY category ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), MAX(amount) OVER (PARTITION BY category ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM orders",
        "set",
    ),
    _c(
        "over_range_interval_sum",
        "SELECT id, category, SUM(qty) OVER (PARTITION BY category ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) FROM orders",
        "set",
    ),
    _c(
        "over_range_interval_global",
        "SELECT id, COUNT(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW), MAX(amount) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) FROM orders",
        "set",
    ),
    _c(
        "over_range_interval_same_time",
        "SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '4' SECOND PRECEDING AND CURRENT ROW) FROM events",
        "set",
        _E,
    ),
    _c(
        "over_rows_bounded_late",
        "SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), COUNT(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM events",
        "set",
        _E,
    ),
    _c(
        "over_rows_unbounded_late",
        "SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM events",
        "set",
        _E,
    ),
    _c(
        "over_rows_bounded_expression_arg",
        "SELECT id, SUM(qty * 2) OVER (PARTITION BY customer ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) + 1 FROM orders",
        "set",
    ),
    _c(
        "over_range_minute_distinct",
        "SELECT id, COUNT(DISTINCT customer) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW) FROM orders",
        "set",
    ),
    _c(
        "error_over_non_time_order",
        "SELECT id, SUM(qty) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM orders",
    ),
    _c(
        "error_over_descending",
        "SELECT id, SUM(qty) OVER (ORDER BY ts DESC ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM orders",
    ),
    _c(
        "error_over_following",
        "SELECT id, SUM(qty) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM orders",
    ),
    _c(
        "error_session_without_watermark",
        "SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE words, DESCRIPTOR(n), INTERVAL '5' SECOND)) GROUP BY window_start, window_end",
        tables=_W,
    ),
    _c(
        "over_named_window",
        "SELECT id, SUM(amount) OVER w, COUNT(*) OVER w FROM orders WINDOW w AS (PARTITION BY customer ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
        "set",
    ),
    _c(
        "error_over_two_windows",
        "SELECT id, SUM(qty) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), SUM(qty) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM orders",
    ),
    # -- streaming ORDER BY a time attribute (Flink's TemporalSort) ----------------------------------------------
    _c("order_by_rowtime", "SELECT id, customer, ts FROM orders ORDER BY ts"),
    _c("order_by_rowtime_then_column", "SELECT k, v, ts FROM events ORDER BY ts, v DESC", tables=_E),
    _c("order_by_rowtime_filtered", "SELECT k, v FROM events WHERE v > 2 ORDER BY ts ASC, k", tables=_E),
    _c("error_order_by_rowtime_desc", "SELECT id FROM orders ORDER BY ts DESC"),
    _c("error_order_by_non_time", "SELECT id FROM orders ORDER BY amount"),
    # -- errors (fluvial must fail too; messages are fluvial's own, with line and column) -----------------------
    _c("error_unknown_column", "SELECT nosuch FROM orders"),
    _c("error_type_mismatch", "SELECT customer + 1 FROM orders"),
    _c("error_syntax", "SELEC id FROM orders"),
    _c("error_not_grouped", "SELECT customer, id, COUNT(*) FROM orders GROUP BY customer"),
    _c("error_unknown_table", "SELECT * FROM nosuch"),
    _c(
        "error_window_without_watermark",
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE words, DESCRIPTOR(n), INTERVAL '5' SECOND)) GROUP BY window_start, window_end",
        tables=_W,
    ),
    _c("error_where_not_boolean", "SELECT id FROM orders WHERE qty"),
    _c("error_sum_string", "SELECT SUM(customer) FROM orders"),
    # -- functions created by DDL (LANGUAGE PYTHON), pandas conditions in joins, processing-time joins ----------
    _c(
        "function_ddl_scalar",
        "SELECT id, plus_tax(amount) FROM orders",
        setup=_function("TEMPORARY", "plus_tax", "plus_tax"),
    ),
    _c(
        "function_ddl_catalog_scalar_in_where",
        "SELECT id, customer FROM orders WHERE PLUS_TAX(amount) > 10",
        setup=_function("", "plus_tax", "plus_tax"),
    ),
    _c(
        "function_ddl_system_aggregate",
        "SELECT customer, total_qty(qty) AS q FROM orders GROUP BY customer",
        "final",  # PyFlink's Python group aggregation emits per bundle: the same final table, fewer changes
        setup=_function("TEMPORARY SYSTEM", "total_qty", "total_qty"),
    ),
    _c(
        "join_pandas_condition",
        "SELECT o.id, c.city FROM orders o JOIN customers c ON o.customer = c.name AND above_tier(o.qty, c.tier)",
        "set",
        _J,
        _function("TEMPORARY", "above_tier", "above_tier"),
    ),
    _c(
        "error_join_pandas_condition_left",
        "SELECT o.id, c.city FROM orders o LEFT JOIN customers c ON o.customer = c.name AND above_tier(o.qty, c.tier)",
        "set",
        _J,
        _function("TEMPORARY", "above_tier", "above_tier"),
    ),
    _c(
        "interval_join_proctime",  # bounds wide enough that every pair of the run matches: a deterministic set
        "SELECT a.id, b.id AS other FROM orders_pt a JOIN orders_pt b ON a.customer = b.customer "
        "AND a.p BETWEEN b.p - INTERVAL '1' HOUR AND b.p + INTERVAL '1' HOUR",
        "set",
        _PT,
    ),
    _c(
        "window_table_proctime",
        "SELECT id, window_start < window_end AS ordered FROM TABLE(TUMBLE(TABLE orders_pt, DESCRIPTOR(p), INTERVAL '5' SECOND))",
        "set",
        _PT,
    ),
    _c(
        "error_window_join_proctime",
        "SELECT L.id, R.id FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders_pt, DESCRIPTOR(p), INTERVAL '5' SECOND))) L "
        "JOIN (SELECT * FROM TABLE(TUMBLE(TABLE orders_pt, DESCRIPTOR(p), INTERVAL '5' SECOND))) R "
        "ON L.id = R.id AND L.window_start = R.window_start AND L.window_end = R.window_end",
        "set",
        _PT,
    ),
    # -- LATERAL TABLE (udtfs), UNNEST, value constructors ---------------------------------------------------
    _c(
        "lateral_comma",
        "SELECT n, word, len FROM words, LATERAL TABLE(split_words(line)) AS T(word, len)",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "lateral_cross_join_qualified",
        "SELECT w.n, T.word FROM words AS w CROSS JOIN LATERAL TABLE(split_words(w.line)) AS T(word, len)",
        tables=_W,
        setup=_function("TEMPORARY SYSTEM", "split_words", "split_words"),
    ),
    _c(
        "lateral_left_on_true",
        "SELECT n, word, len FROM words LEFT JOIN LATERAL TABLE(split_words(line)) AS T(word, len) ON TRUE",
        tables=_W,
        setup=_function("", "split_words", "split_words"),
    ),
    _c(
        "lateral_join_on_true",
        "SELECT n, w FROM words JOIN LATERAL TABLE(split_words(line)) AS T(w, l) ON TRUE",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "lateral_no_alias",
        "SELECT * FROM words, LATERAL TABLE(split_words(line))",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "lateral_table_alias_only",
        "SELECT n, T.f0 FROM words, LATERAL TABLE(split_words(line)) AS T",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "lateral_single_column",
        "SELECT id, i FROM orders, LATERAL TABLE(count_to(qty)) AS T(i)",
        setup=_function("TEMPORARY", "count_to", "count_to"),
    ),
    _c(
        "lateral_where",
        "SELECT n, word FROM words, LATERAL TABLE(split_words(line)) AS T(word, len) WHERE len > 4 AND n < 5",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "lateral_expression_argument_aggregated",
        "SELECT word, COUNT(*) AS c, SUM(n) AS s FROM words, LATERAL TABLE(split_words(LOWER(line))) AS T(word, len) "
        "GROUP BY word",
        "final",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "error_lateral_left_not_true",
        "SELECT n, word FROM words LEFT JOIN LATERAL TABLE(split_words(line)) AS T(word, len) ON word = line",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "error_lateral_alias_degree",
        "SELECT n FROM words, LATERAL TABLE(split_words(line)) AS T(word)",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "error_lateral_scalar_function",
        "SELECT id, x FROM orders, LATERAL TABLE(plus_tax(amount)) AS T(x)",
        setup=_function("TEMPORARY", "plus_tax", "plus_tax"),
    ),
    _c("error_lateral_unknown_function", "SELECT id FROM orders, LATERAL TABLE(no_such_udtf(id)) AS T(x)"),
    _c(
        "error_udtf_in_select_list",
        "SELECT split_words(line) FROM words",
        tables=_W,
        setup=_SPLIT,
    ),
    _c(
        "unnest_cross_join",
        "SELECT o.id, x FROM (SELECT id, ARRAY[id, id * 10] AS arr FROM orders) AS o CROSS JOIN UNNEST(o.arr) AS A(x)",
    ),
    _c("unnest_comma", "SELECT id, x FROM (SELECT id, ARRAY[qty, id] AS arr FROM orders) AS o, UNNEST(o.arr) AS A(x)"),
    _c(  # Calcite's name for a scalar element's column
        "unnest_no_alias_expr",
        "SELECT id, EXPR$0 FROM (SELECT id, ARRAY[id, qty] AS arr FROM orders) AS o CROSS JOIN UNNEST(o.arr)",
    ),
    _c(
        "unnest_with_ordinality",
        "SELECT id, x, pos FROM (SELECT id, ARRAY[customer, category] AS arr FROM orders) AS o "
        "CROSS JOIN UNNEST(o.arr) WITH ORDINALITY AS A(x, pos)",
    ),
    _c(
        "unnest_left_on_true",
        "SELECT id, x FROM (SELECT id, ARRAY[id] AS arr FROM orders) AS o LEFT JOIN UNNEST(o.arr) AS A(x) ON TRUE",
    ),
    _c("unnest_map", "SELECT id, k, v FROM orders CROSS JOIN UNNEST(MAP['a', id, 'b', qty]) AS M(k, v)", "set"),
    _c(
        "unnest_rows",
        "SELECT id, a, b FROM orders CROSS JOIN UNNEST(ARRAY[ROW(id, customer), ROW(qty, category)]) AS R(a, b)",
    ),
    _c("unnest_standalone", "SELECT x * 2 AS y FROM UNNEST(ARRAY[1, 2, 3]) AS A(x)"),
    _c("unnest_standalone_ordinality", "SELECT * FROM UNNEST(ARRAY['a', 'b']) WITH ORDINALITY AS A(x, n)"),
    _c("error_unnest_not_collection", "SELECT id, x FROM orders CROSS JOIN UNNEST(orders.id) AS A(x)"),
    # PyFlink 2.3's collect cannot return ARRAY/MAP/ROW values (its Python decoder stops short: EOFError), so the
    # constructors are compared through their elements
    _c(
        "ctor_array",
        "SELECT ARRAY[id, qty][1], ARRAY[id, qty][2], ARRAY['a', customer][2], ARRAY[id, amount][1], "
        "CARDINALITY(ARRAY[id, amount, 1]) FROM orders",
    ),
    _c(
        "ctor_map",
        "SELECT MAP['k1', id, 'k2', qty]['k2'], MAP[customer, amount][customer], MAP[id, 'x', 2, 'y'][2], "
        "CARDINALITY(MAP['a', 1, 'a', 2]) FROM orders",
    ),
    _c(
        "ctor_access",
        "SELECT ARRAY[id, qty][2], MAP['k', amount]['k'], MAP['k', amount]['x'], CARDINALITY(ARRAY[id, qty]) "
        "FROM orders",
    ),
    _c(
        "ctor_nested",
        "SELECT ARRAY[ARRAY[id], ARRAY[qty, 1]][2][1], MAP[id, ARRAY[customer]][id][1] FROM orders",
    ),
    _c(
        "lateral_join_on_condition",
        "SELECT n, w FROM words JOIN LATERAL TABLE(split_words(line)) AS T(w, l) ON l > 5",
        tables=_W,
        setup=_SPLIT,
    ),
    _c("error_ctor_array_mixed", "SELECT ARRAY[id, customer] FROM orders"),
    _c("error_ctor_map_mixed_keys", "SELECT MAP['a', 1, 2, 3] FROM orders"),
    _c("error_ctor_map_odd", "SELECT MAP['a', 1, 'b'] FROM orders"),
]

# -- event-time temporal joins of versioned tables --------------------------------------------------------------
_T = ("orders", "tiers")
_TIERS_V = (
    "CREATE TEMPORARY VIEW tiers_v AS SELECT name, tier, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY name "
    "ORDER BY ts DESC) AS rn FROM tiers) WHERE rn = 1",
)
_AS_OF = "FOR SYSTEM_TIME AS OF o.ts AS t ON o.customer = t.name"
CASES += [
    _c(
        "temporal_inner_view",
        f"SELECT o.id, o.customer, o.ts, t.tier, t.ts FROM orders AS o JOIN tiers_v {_AS_OF}",
        "set",
        _T,
        _TIERS_V,
    ),
    _c("temporal_left_view", f"SELECT o.id, t.tier FROM orders AS o LEFT JOIN tiers_v {_AS_OF}", "set", _T, _TIERS_V),
    _c(
        "temporal_left_condition",
        f"SELECT o.id, t.tier FROM orders AS o LEFT JOIN tiers_v {_AS_OF} AND t.tier > 1 WHERE o.id > 2",
        "set",
        _T,
        _TIERS_V,
    ),
    _c(
        "temporal_inner_pk",
        f"SELECT o.id, t.tier, o.amount * t.tier FROM orders AS o JOIN tiers_pk {_AS_OF}",
        "set",
        ("orders", "tiers_pk"),
    ),
    _c("temporal_star", f"SELECT * FROM orders AS o JOIN tiers_v {_AS_OF} WHERE t.tier < 3", "set", _T, _TIERS_V),
    _c(
        "temporal_view_over_view",
        "SELECT o.id, t.level FROM orders AS o LEFT JOIN tiers_w FOR SYSTEM_TIME AS OF o.ts AS t ON o.customer = t.who",
        "set",
        _T,
        (
            *_TIERS_V,
            "CREATE TEMPORARY VIEW tiers_w AS SELECT name AS who, tier * 10 AS level, ts FROM tiers_v",
        ),
    ),
    _c(
        "error_temporal_proctime_view",
        "SELECT o.id, t.tier FROM orders_pt AS o JOIN tiers_v FOR SYSTEM_TIME AS OF o.p AS t ON o.customer = t.name",
        tables=("orders_pt", "tiers"),
        setup=_TIERS_V,
    ),
    _c("error_temporal_no_key", f"SELECT o.id, t.tier FROM orders AS o JOIN tiers {_AS_OF}", tables=_T),
    _c(
        "error_temporal_full",
        f"SELECT o.id, t.tier FROM orders AS o FULL JOIN tiers_v {_AS_OF}",
        tables=_T,
        setup=_TIERS_V,
    ),
    _c(
        "error_temporal_key_not_joined",
        "SELECT o.id, t.tier FROM orders AS o JOIN tiers_v FOR SYSTEM_TIME AS OF o.ts AS t ON o.qty = t.tier",
        tables=_T,
        setup=_TIERS_V,
    ),
]
