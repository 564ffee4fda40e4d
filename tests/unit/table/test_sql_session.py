"""The SQL client session (`fluvial sql`): statements in order, result modes, errors that do not end it."""

from __future__ import annotations

import io

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment
from fluvial.table.sql_session import SqlSession, statements_of

SCRIPT = """
CREATE TABLE src (n INT) WITH ('connector' = 'datagen', 'fields.n.kind' = 'sequence',
  'fields.n.start' = '1', 'fields.n.end' = '3', 'scan.parallelism' = '1');
SET 'sql-client.execution.result-mode' = 'changelog';
SELECT COUNT(*) FROM src;
SELECT nosuch FROM src;
SET 'sql-client.execution.result-mode' = 'table';
SELECT n % 2 AS odd, COUNT(*) AS c FROM src GROUP BY n % 2;
QUIT;
SELECT 'never run';
"""


@pytest.mark.timeout(60)
def test_a_script_runs_in_order_with_its_result_modes():
    out = io.StringIO()
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    session = SqlSession(t_env, out)
    for statement in statements_of(SCRIPT.splitlines(keepends=True)):
        if not session.execute(statement):
            break
    text = out.getvalue()
    assert (
        " op                EXPR$0\n +I                     1\n -U                     1\n +U                     2\n"
        in text
    )
    assert "Received a total of 5 rows\n" in text
    assert "[ERROR] ValidationException: From line 1, column 8: Column 'nosuch' not found" in text
    assert "| odd | c |\n+-----+---+\n" in text and "|   1 | 2 |\n" in text and "|   0 | 1 |\n" in text
    assert "never run" not in text


def test_statements_split_at_semicolons_outside_quotes():
    lines = ["SELECT 'a;b'\n", "FROM t;\n", "SELECT 2;"]
    assert list(statements_of(lines)) == ["SELECT 'a;b'\nFROM t", "SELECT 2"]


def test_a_bad_result_mode_is_an_error_naming_the_modes_and_the_session_goes_on():
    out = io.StringIO()
    session = SqlSession(TableEnvironment.create(EnvironmentSettings.in_streaming_mode()), out)
    assert session.execute("SET 'sql-client.execution.result-mode' = 'grid'")
    assert session.failed
    assert "'grid' is not a result mode of sql-client.execution.result-mode: use one of 'tableau'" in out.getvalue()
    assert session.execute("SHOW TABLES") and not session.failed


def test_job_statements_of_an_embedded_session_say_how_to_reach_a_cluster():
    from fluvial.cli.sql_jobs import ClusterJobStatements

    out = io.StringIO()
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    session = SqlSession(t_env, out, job_statements=ClusterJobStatements())
    session.execute("SHOW JOBS;")
    assert session.failed
    assert (
        "[ERROR] ValidationException: SHOW JOBS acts on a session cluster's jobs, and this session runs its jobs "
        "embedded: start the client with -m HOST:PORT" in out.getvalue()
    )


@pytest.mark.timeout(60)
def test_a_statement_set_runs_its_inserts_as_one_job_in_both_of_flinks_forms(tmp_path):
    out = io.StringIO()
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.get_config().set("table.dml-sync", "true")
    session = SqlSession(t_env, out)
    script = f"""
    CREATE TABLE src (n INT) WITH ('connector' = 'datagen', 'fields.n.kind' = 'sequence',
      'fields.n.start' = '1', 'fields.n.end' = '4');
    CREATE TABLE a (n INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "a"}', 'format' = 'csv');
    CREATE TABLE b (n INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "b"}', 'format' = 'csv');
    BEGIN STATEMENT SET;
    INSERT INTO a SELECT n FROM src;
    SELECT 1;
    INSERT INTO b SELECT n * 10 FROM src;
    END;
    EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT n + 100 FROM src; INSERT INTO b SELECT 0 FROM src; END;
    """
    failed = []
    for statement in statements_of(script.splitlines(keepends=True)):
        session.execute(statement)
        failed.append(session.failed)
    text = out.getvalue()
    assert "[INFO] Begin a statement set." in text
    assert text.count("[INFO] Add SQL update statement to the statement set.") == 2
    assert "[ERROR] ValidationException: only INSERT statements go in a statement set" in text
    assert failed.count(True) == 1
    assert text.count("[INFO] SQL update statement has been successfully submitted to the cluster:") == 2

    def numbers(name):
        return sorted(
            int(v) for path in (tmp_path / name).rglob("*") if path.is_file() for v in path.read_text().split()
        )

    assert numbers("a") == [1, 2, 3, 4, 101, 102, 103, 104]
    assert numbers("b") == [0, 0, 0, 0, 10, 20, 30, 40]


@pytest.mark.timeout(30)
def test_explain_prints_the_plan_as_text():
    out = io.StringIO()
    session = SqlSession(TableEnvironment.create(EnvironmentSettings.in_streaming_mode()), out)
    session.execute("CREATE TABLE src (n INT, s STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '3')")
    session.execute("EXPLAIN SELECT n FROM src WHERE n > 1")
    text = out.getvalue()
    assert "== Abstract Syntax Tree ==\nLogicalProject(n=[$0])\n+- LogicalFilter(condition=[>($0, 1)])\n" in text
    assert "+--" not in text  # no tableau box around it, as Flink's client prints EXPLAIN
