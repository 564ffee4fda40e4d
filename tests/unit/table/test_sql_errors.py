"""Bad SQL gets one clear sentence with the line and column: syntax, unknown column, type mismatch, an
event-time window without a watermark, an unknown table, an ungrouped column."""

from __future__ import annotations

import pytest

from fluvial.table import EnvironmentSettings, SqlParserException, TableEnvironment, ValidationException


@pytest.fixture
def t_env(tmp_path) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.execute_sql(f"""CREATE TABLE clicks (
        user_name STRING,
        url STRING,
        ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
    ) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', 'format' = 'csv')""")
    env.execute_sql(
        f"CREATE TABLE plain (user_name STRING, ts TIMESTAMP(3)) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path}', 'format' = 'csv')"
    )
    return env


def test_a_syntax_error_names_the_token_line_and_column(t_env):
    with pytest.raises(SqlParserException, match=r'Encountered "=" at line 2, column 19'):
        t_env.sql_query("SELECT user_name FROM clicks\nWHERE user_name = = 'a'")


def test_an_unknown_column_names_its_position(t_env):
    with pytest.raises(ValidationException, match=r"From line 1, column 8: Column 'nosuch' not found"):
        t_env.sql_query("SELECT nosuch FROM clicks")


def test_a_type_mismatch_names_the_operator_and_types(t_env):
    with pytest.raises(
        ValidationException, match=r"From line 2, column 3: Cannot apply '\+' to arguments of type '<STRING> \+ <INT"
    ):
        t_env.sql_query("SELECT\n  user_name + 1 FROM clicks")


def test_a_window_without_a_watermark_says_to_declare_one(t_env):
    query = (
        "SELECT window_start, COUNT(*) FROM TABLE(\n  TUMBLE(TABLE plain, DESCRIPTOR(ts), INTERVAL '1' MINUTE))"
        "\nGROUP BY window_start, window_end"
    )
    with pytest.raises(
        ValidationException,
        match=r"line 2, column 34: .*requires the timecol to be a time "
        r"attribute type, but is TIMESTAMP\(3\).*WATERMARK FOR ts",
    ):
        t_env.sql_query(query)


def test_an_unknown_table(t_env):
    with pytest.raises(ValidationException, match=r"line 1, column 15: Object 'nosuch' not found"):
        t_env.sql_query("SELECT * FROM nosuch")


def test_an_ungrouped_column(t_env):
    with pytest.raises(ValidationException, match=r"line 1, column 8: Expression 'url' is not being grouped"):
        t_env.sql_query("SELECT url, COUNT(*) FROM clicks GROUP BY user_name")


def test_a_watermark_on_a_missing_column_fails_at_create(t_env):
    with pytest.raises(ValidationException, match="Invalid column name 'nope' for rowtime attribute"):
        t_env.execute_sql("CREATE TABLE bad (a INT, WATERMARK FOR nope AS nope) WITH ('connector' = 'datagen')")


def test_unknown_connector_options_are_refused(t_env):
    t_env.execute_sql("CREATE TABLE gen (a INT) WITH ('connector' = 'datagen', 'rows-per-secnd' = '5')")
    with pytest.raises(ValidationException, match="Unsupported options found for 'datagen': rows-per-secnd"):
        t_env.execute_sql("SELECT * FROM gen").collect()


def test_an_unknown_table_option_is_refused(t_env):
    with pytest.raises(ValidationException, match="unknown or unsupported table option 'table.exec.nope'"):
        t_env.execute_sql("SET 'table.exec.nope' = 'x'")
