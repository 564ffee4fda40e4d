"""LATERAL TABLE (a udtf per row), UNNEST and the value constructors in SQL, and their errors: one small job per
form, planned onto the Table API's Correlate (the differential suite compares the same forms with PyFlink)."""

from __future__ import annotations

import pytest

from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment, ValidationException
from fluvial.table.runtime.unnest import UnnestFunction, unnest_columns
from fluvial.table.udf import TableFunction, udf, udtf

pytestmark = pytest.mark.timeout(60)


@udtf(result_types=[DataTypes.STRING(), DataTypes.INT()])
def split_line(line):
    for word in (line or "").split():
        yield word, len(word)


class Repeat(TableFunction):
    def eval(self, word, n):
        for _ in range(n):
            yield word


@pytest.fixture
def t_env() -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    table = env.from_elements(
        [(1, "a bb", [1, 2]), (2, "", []), (3, None, None), (4, "ccc", [7])],
        DataTypes.ROW(
            [
                DataTypes.FIELD("id", DataTypes.INT()),
                DataTypes.FIELD("line", DataTypes.STRING()),
                DataTypes.FIELD("arr", DataTypes.ARRAY(DataTypes.INT())),
            ]
        ),
    )
    env.create_temporary_view("t", table)
    env.create_temporary_system_function("split_line", split_line)
    return env


def rows(t_env: TableEnvironment, query: str) -> list[tuple]:
    with t_env.sql_query(query).execute().collect() as result:
        return [tuple(r) for r in result]


def test_comma_cross_and_left_lateral_joins_with_aliases_qualifiers_and_where(t_env):
    assert rows(t_env, "SELECT id, w, n FROM t, LATERAL TABLE(split_line(t.line)) AS T(w, n) WHERE n > 1") == [
        (1, "bb", 2),
        (4, "ccc", 3),
    ]
    assert rows(t_env, "SELECT t.id, T.w FROM t CROSS JOIN LATERAL TABLE(split_line(line)) AS T(w, n)") == [
        (1, "a"),
        (1, "bb"),
        (4, "ccc"),
    ]
    assert rows(t_env, "SELECT id, w FROM t LEFT JOIN LATERAL TABLE(split_line(line)) AS T(w, n) ON TRUE") == [
        (1, "a"),
        (1, "bb"),
        (2, None),
        (3, None),
        (4, "ccc"),
    ]
    # an inner JOIN ... ON keeps the joined rows the condition holds for
    assert rows(t_env, "SELECT id, w FROM t JOIN LATERAL TABLE(split_line(line)) AS T(w, n) ON n = id + 1") == [
        (1, "bb")
    ]


def test_no_alias_gives_the_functions_field_names_and_a_clashing_name_is_suffixed(t_env):
    table = t_env.sql_query("SELECT * FROM t, LATERAL TABLE(split_line(line))")
    assert table.get_schema().get_field_names() == ["id", "line", "arr", "f0", "f1"]
    table = t_env.sql_query("SELECT * FROM t, LATERAL TABLE(split_line(line)) AS T(id, line)")
    assert table.get_schema().get_field_names() == ["id", "line", "arr", "id0", "line0"]


def test_a_function_created_by_ddl_or_a_table_function_class_is_called_by_lateral_table(t_env):
    t_env.create_temporary_function("repeat_word", udtf(Repeat(), result_types=[DataTypes.STRING()], input_types=None))
    assert rows(t_env, "SELECT id, r FROM t, LATERAL TABLE(repeat_word(line, id)) AS R(r) WHERE id < 2") == [
        (1, "a bb")
    ]
    # called once with constants: FROM TABLE(f(...)) and FROM UNNEST(...)
    assert rows(t_env, "SELECT * FROM TABLE(repeat_word('x', 2)) AS R(r)") == [("x",), ("x",)]
    assert rows(t_env, "SELECT * FROM UNNEST(ARRAY[3, 4]) WITH ORDINALITY AS A(x, n)") == [(3, 1), (4, 2)]
    plan = t_env.explain_sql("SELECT id, r FROM t, LATERAL TABLE(repeat_word(line, id)) AS R(r)")
    assert "Correlate(invocation=[Repeat]" in plan
    # a WHERE conjunct on the input's columns runs below the function, and only the columns read go through it
    plan = t_env.explain_sql("SELECT id, w FROM t, LATERAL TABLE(split_line(line)) AS T(w, n) WHERE id > 1 AND n > 1")
    physical = plan.split("== Optimized Execution Plan ==")[1].split("== fluvial JobGraph ==")[0]
    assert "Calc(select=[id, w], where=[(n > 1)])\n+- Correlate(invocation=[split_line], select=[id, line, w, n]" in (
        physical
    )
    assert "+- Calc(select=[id, line], where=[(id > 1)])" in physical


def test_lateral_errors_name_the_problem_and_the_position(t_env):
    t_env.create_temporary_function("add_one", udf(lambda x: x + 1, result_type=DataTypes.INT()))
    with pytest.raises(ValidationException, match=r"From line 1, column 7\d: Only literal TRUE is accepted"):
        t_env.sql_query("SELECT id FROM t LEFT JOIN LATERAL TABLE(split_line(line)) AS T(w, n) ON w = line")
    with pytest.raises(ValidationException, match="must have same degree as table; table has 2 columns"):
        t_env.sql_query("SELECT id FROM t, LATERAL TABLE(split_line(line)) AS T(w)")
    with pytest.raises(ValidationException, match="Function 'add_one' cannot be used as a table function"):
        t_env.sql_query("SELECT id FROM t, LATERAL TABLE(add_one(id)) AS T(x)")
    with pytest.raises(ValidationException, match="No match found for function signature nope"):
        t_env.sql_query("SELECT id FROM t, LATERAL TABLE(nope(id)) AS T(x)")
    with pytest.raises(ValidationException, match=r"Cannot apply 'UNNEST' to arguments of type 'UNNEST\(<INT>\)'"):
        t_env.sql_query("SELECT id FROM t CROSS JOIN UNNEST(t.id) AS A(x)")
    with pytest.raises(ValidationException, match=r"RIGHT JOIN LATERAL is not supported"):
        t_env.sql_query("SELECT id FROM t RIGHT JOIN LATERAL TABLE(split_line(line)) AS T(w, n) ON TRUE")


def test_unnest_arrays_maps_rows_with_ordinality_and_left_join(t_env):
    assert rows(t_env, "SELECT id, x, pos FROM t CROSS JOIN UNNEST(t.arr) WITH ORDINALITY AS A(x, pos)") == [
        (1, 1, 1),
        (1, 2, 2),
        (4, 7, 1),
    ]
    assert rows(t_env, "SELECT id, x FROM t LEFT JOIN UNNEST(arr) AS A(x) ON TRUE WHERE id > 1") == [
        (2, None),
        (3, None),
        (4, 7),
    ]
    assert rows(t_env, "SELECT id, k, v FROM t, UNNEST(MAP['a', id]) AS M(k, v) WHERE id = 1") == [(1, "a", 1)]
    assert rows(t_env, "SELECT id, a, b FROM t CROSS JOIN UNNEST(ARRAY[ROW(id, line)]) AS R(a, b) WHERE id = 4") == [
        (4, 4, "ccc")
    ]


def test_unnest_function_over_each_collection_kind():
    int_array = DataTypes.ARRAY(DataTypes.INT())
    assert unnest_columns(int_array, True) == [("EXPR$0", DataTypes.INT()), ("ORDINALITY", DataTypes.INT(False))]
    assert list(UnnestFunction(int_array, False, unnest_columns(int_array, False))._invoke(None)) == []
    multiset = DataTypes.MULTISET(DataTypes.STRING())
    unnest = UnnestFunction(multiset, False, unnest_columns(multiset, False))
    assert sorted(unnest._invoke({"a": 2, "b": 1})) == [("a",), ("a",), ("b",)]
    rows_type = DataTypes.ARRAY(
        DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT(False)), DataTypes.FIELD("b", DataTypes.STRING())])
    )
    columns = unnest_columns(rows_type, False)
    assert [n for n, _ in columns] == ["a", "b"] and columns[0][1].nullable  # a NULL row's fields are NULL
    assert list(UnnestFunction(rows_type, False, columns)._invoke([(1, "x"), None])) == [(1, "x"), (None, None)]


def test_value_constructors_and_one_based_access(t_env):
    table = t_env.sql_query(
        "SELECT ARRAY[id, 2][1] AS first, MAP['k', line]['k'] AS k, MAP[1, 'one'][1] AS one, "
        "ROW(id, line) AS r, CARDINALITY(ARRAY[id]) AS c FROM t WHERE id = 4"
    )
    assert str(table.get_schema().get_field_data_type("r")) == "ROW<`EXPR$0` INT, `EXPR$1` STRING> NOT NULL"
    with table.execute().collect() as result:
        (row,) = list(result)
    assert (row[0], row[1], row[2], tuple(row[3]), row[4]) == (4, "ccc", "one", (4, "ccc"), 1)
    with pytest.raises(ValidationException, match="Map requires an even number of arguments"):
        t_env.sql_query("SELECT MAP['a', 1, 'b'] FROM t")
    with pytest.raises(
        ValidationException, match="Parameters must be of the same type: there is no common type of INT and STRING"
    ):
        t_env.sql_query("SELECT ARRAY[id, line] FROM t")


def test_the_table_api_calls_a_registered_table_function_by_name(t_env):
    from fluvial.table.expressions import call, col

    table = (
        t_env.from_path("t").join_lateral(call("split_line", col("line")).alias("w", "n")).select(col("id"), col("w"))
    )
    with table.execute().collect() as result:
        assert [tuple(r) for r in result] == [(1, "a"), (1, "bb"), (4, "ccc")]
