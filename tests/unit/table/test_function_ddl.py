"""Function DDL (`CREATE/ALTER/DROP [TEMPORARY [SYSTEM]] FUNCTION ... LANGUAGE PYTHON`, `SHOW [USER] FUNCTIONS`)
and the TableEnvironment's function methods: scopes, shadowing, python.files, and the refusals of Java."""

from __future__ import annotations

import io
import sys
import textwrap
from pathlib import Path

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment
from fluvial.table.errors import SqlParserException, ValidationException
from fluvial.table.sql_session import SqlSession, statements_of

pytestmark = pytest.mark.timeout(60)

MODULE = "fluvial_ddl_udfs"
SOURCE = textwrap.dedent(
    """
    from collections.abc import Iterator

    from fluvial.table import DataTypes
    from fluvial.table.udf import AggregateFunction, ScalarFunction, TableFunction, udf, udtf


    @udf(result_type=DataTypes.BIGINT())
    def add_one(x):
        return x + 1


    @udf(result_type=DataTypes.BIGINT())
    def add_ten(x):
        return x + 10


    @udtf(result_types=[DataTypes.STRING()])
    def words(s):
        yield from s.split()


    class Total(AggregateFunction):
        def create_accumulator(self):
            return [0]

        def accumulate(self, acc, v):
            acc[0] += v

        def get_value(self, acc):
            return acc[0]

        def get_result_type(self):
            return DataTypes.BIGINT()


    class Bare(ScalarFunction):
        def eval(self, x):
            return x


    class Shout(ScalarFunction):
        def eval(self, s) -> str:
            return s.upper() + "!"


    class Lengths(TableFunction):
        def eval(self, s) -> Iterator[tuple[str, int]]:
            for word in s.split():
                yield word, len(word)


    def plain(x):
        return x
    """
)


@pytest.fixture
def t_env(tmp_path: Path):
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(f"SET 'python.files' = '{tmp_path / MODULE}.py'")
    t_env.create_temporary_view("t", t_env.from_elements([(1, "a b"), (2, "c")], ["n", "s"]))
    yield t_env
    sys.modules.pop(MODULE, None)


def _rows(t_env: TableEnvironment, query: str) -> list:
    with t_env.execute_sql(query).collect() as rows:
        return sorted(tuple(r) for r in rows)


def _last(t_env: TableEnvironment, query: str) -> tuple:
    with t_env.execute_sql(query).collect() as rows:
        return tuple(list(rows)[-1])


def test_create_function_language_python_is_callable_and_listed(t_env: TableEnvironment) -> None:
    t_env.execute_sql(f"CREATE TEMPORARY FUNCTION add_one AS '{MODULE}.add_one' LANGUAGE PYTHON")
    t_env.execute_sql(f"CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS total AS '{MODULE}.Total' LANGUAGE PYTHON")
    t_env.execute_sql(f"create function `Words` as '{MODULE}.words' language python")
    assert _rows(t_env, "SELECT ADD_ONE(n) FROM t") == [(2,), (3,)]
    assert _last(t_env, "SELECT total(n) FROM t") == (3,)
    with pytest.raises(ValidationException, match="a table function .* LATERAL TABLE"):
        t_env.execute_sql("SELECT words(s) FROM t")  # a udtf made by DDL is a table function
    user = [r[0] for r in _rows(t_env, "SHOW USER FUNCTIONS")]
    assert user == ["add_one", "total", "words"] == t_env.list_user_defined_functions()
    every = [r[0] for r in _rows(t_env, "SHOW FUNCTIONS")]
    assert {"upper", "sum", "add_one", "words"} <= set(every) and every == t_env.list_functions()


def test_scopes_shadow_alter_and_drop_as_flink(t_env: TableEnvironment) -> None:
    t_env.execute_sql(f"CREATE FUNCTION f AS '{MODULE}.add_one' LANGUAGE PYTHON")
    t_env.execute_sql(f"CREATE FUNCTION IF NOT EXISTS f AS '{MODULE}.add_ten' LANGUAGE PYTHON")  # kept
    assert _rows(t_env, "SELECT f(n) FROM t") == [(2,), (3,)]
    t_env.execute_sql(f"CREATE TEMPORARY SYSTEM FUNCTION f AS '{MODULE}.add_ten' LANGUAGE PYTHON")
    assert _rows(t_env, "SELECT f(n) FROM t") == [(11,), (12,)]  # a temporary system function shadows
    assert t_env.drop_temporary_system_function("f")
    assert _rows(t_env, "SELECT f(n) FROM t") == [(2,), (3,)]
    t_env.execute_sql(f"ALTER FUNCTION f AS '{MODULE}.add_ten' LANGUAGE PYTHON")
    assert _rows(t_env, "SELECT f(n) FROM t") == [(11,), (12,)]
    t_env.execute_sql(f"CREATE TEMPORARY FUNCTION g AS '{MODULE}.add_one' LANGUAGE PYTHON")
    with pytest.raises(ValidationException, match="Alter temporary catalog function is not supported"):
        t_env.execute_sql(f"ALTER TEMPORARY FUNCTION g AS '{MODULE}.add_ten' LANGUAGE PYTHON")
    with pytest.raises(ValidationException, match="already exists; drop it first or use IF NOT EXISTS"):
        t_env.execute_sql(f"CREATE TEMPORARY FUNCTION g AS '{MODULE}.add_one' LANGUAGE PYTHON")
    with pytest.raises(ValidationException, match="'g' is a temporary catalog function: use DROP TEMPORARY FUNCTION"):
        t_env.execute_sql("DROP FUNCTION g")
    t_env.execute_sql("DROP TEMPORARY FUNCTION IF EXISTS g")
    t_env.execute_sql("DROP TEMPORARY FUNCTION IF EXISTS g")
    t_env.execute_sql(f"CREATE TEMPORARY FUNCTION abs AS '{MODULE}.add_one' LANGUAGE PYTHON")
    assert _rows(t_env, "SELECT ABS(n) FROM t") == [(1,), (2,)]  # a built-in function wins over a catalog one
    t_env.execute_sql(f"CREATE TEMPORARY SYSTEM FUNCTION abs AS '{MODULE}.add_one' LANGUAGE PYTHON")
    assert _rows(t_env, "SELECT ABS(n) FROM t") == [(2,), (3,)]  # a temporary system function overrides it
    t_env.execute_sql("DROP TEMPORARY SYSTEM FUNCTION abs")
    t_env.execute_sql("DROP TEMPORARY FUNCTION abs")
    assert t_env.drop_function("f") and not t_env.drop_function("f")
    assert t_env.list_user_defined_functions() == []


def test_java_is_refused_in_one_sentence_naming_the_way_out(t_env: TableEnvironment) -> None:
    way_out = r"fluvial has no JVM, so it cannot run the Java function .*; write the function in Python"
    for statement in (
        "CREATE FUNCTION j AS 'com.example.Upper' LANGUAGE JAVA",
        "CREATE TEMPORARY FUNCTION j AS 'com.example.Upper'",
        "CREATE TEMPORARY SYSTEM FUNCTION j AS 'com.example.Upper' LANGUAGE SCALA",
        "CREATE FUNCTION j AS 'com.example.Upper' LANGUAGE JAVA USING JAR '/tmp/u.jar'",
    ):
        with pytest.raises(ValidationException, match=way_out):
            t_env.execute_sql(statement)
    with pytest.raises(ValidationException, match=r"without LANGUAGE is a Java function"):
        t_env.execute_sql("CREATE FUNCTION j AS 'my_udfs.upper'")
    for call in (
        lambda: t_env.create_java_function("j", "com.example.Upper"),
        lambda: t_env.create_java_temporary_function("j", "com.example.Upper"),
        lambda: t_env.create_java_temporary_system_function("j", "com.example.Upper"),
    ):
        with pytest.raises(ValidationException, match=way_out):
            call()


@pytest.mark.parametrize(
    ("identifier", "message"),
    [
        ("no_such_module.f", r"Cannot import the module 'no_such_module' .* SET 'python.files'"),
        (f"{MODULE}.missing", f"The module '{MODULE}' has no object 'missing'"),
        (f"{MODULE}.plain", r"not a user-defined function; decorate it with @udf\(result_type=...\)"),
        (f"{MODULE}.Bare", r"Bare without declared types; annotate its eval's result .* or wrap it with udf\("),
        ("nodot", r"A Python function is named by 'module.object', got 'nodot'"),
    ],
)
def test_a_bad_python_identifier_is_one_sentence(t_env: TableEnvironment, identifier: str, message: str) -> None:
    with pytest.raises(ValidationException, match=message):
        t_env.execute_sql(f"CREATE FUNCTION f AS '{identifier}' LANGUAGE PYTHON")
    assert t_env.list_user_defined_functions() == []


def test_function_classes_declare_their_results_by_python_annotations(t_env: TableEnvironment) -> None:
    from fluvial.table import DataTypes

    t_env.execute_sql(f"CREATE TEMPORARY FUNCTION shout AS '{MODULE}.Shout' LANGUAGE PYTHON")
    t_env.execute_sql(f"CREATE TEMPORARY FUNCTION lengths AS '{MODULE}.Lengths' LANGUAGE PYTHON")
    assert _rows(t_env, "SELECT shout(s) FROM t") == [("A B!",), ("C!",)]
    lengths = t_env._catalog.functions["lengths"]
    assert lengths._kind == "table" and lengths._result_types == [DataTypes.STRING(), DataTypes.BIGINT()]


def test_malformed_function_ddl_names_the_form(t_env: TableEnvironment) -> None:
    with pytest.raises(SqlParserException, match=r"CREATE FUNCTION takes CREATE \[TEMPORARY \[SYSTEM\]\] FUNCTION"):
        t_env.execute_sql("CREATE FUNCTION f LANGUAGE PYTHON")
    with pytest.raises(ValidationException, match="LANGUAGE is JAVA, SCALA or PYTHON, not RUST"):
        t_env.execute_sql(f"CREATE FUNCTION f AS '{MODULE}.add_one' LANGUAGE RUST")


def test_table_environment_methods_take_wrappers_and_aggregate_functions(t_env: TableEnvironment) -> None:
    from fluvial.table import DataTypes
    from fluvial.table.udf import AggregateFunction, udf

    class Longest(AggregateFunction):
        def create_accumulator(self):
            return [0]

        def accumulate(self, acc, s):
            acc[0] = max(acc[0], len(s))

        def get_value(self, acc):
            return acc[0]

        def get_result_type(self):
            return DataTypes.INT()

    t_env.create_temporary_function("longest", Longest())  # PyFlink wraps an AggregateFunction itself
    t_env.create_temporary_system_function("twice", udf(lambda x: 2 * x, result_type=DataTypes.BIGINT()))
    assert _rows(t_env, "SELECT twice(n) FROM t") == [(2,), (4,)]
    assert _last(t_env, "SELECT longest(s) FROM t") == (3,)
    with pytest.raises(ValidationException, match="not a user-defined function"):
        t_env.create_temporary_function("bad", lambda x: x)
    assert t_env.drop_temporary_function("longest") and not t_env.drop_temporary_function("longest")


def test_a_sql_script_creates_and_uses_a_python_function(tmp_path: Path) -> None:
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    script = f"""
    SET 'python.files' = '{tmp_path}';
    SET 'parallelism.default' = '1';
    CREATE TEMPORARY FUNCTION add_one AS '{MODULE}.add_one' LANGUAGE PYTHON;
    SHOW USER FUNCTIONS;
    SELECT add_one(41) AS answer;
    DROP TEMPORARY FUNCTION add_one;
    SELECT add_one(1);
    """
    out = io.StringIO()
    session = SqlSession(TableEnvironment.create(EnvironmentSettings.in_streaming_mode()), out)
    try:
        for statement in statements_of(script.splitlines(keepends=True)):
            session.execute(statement)
    finally:
        sys.modules.pop(MODULE, None)
    text = out.getvalue()
    assert "| function name |\n+---------------+\n|       add_one |\n" in text
    assert "| +I |                   42 |" in text
    assert "[ERROR] ValidationException: From line 1, column 8: No match found for function signature add_one" in text
