"""The push-down rule: which filters, columns and limits reach a source, what stays in the plan."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment
from fluvial.table.planner.logical import Aggregate, Calc, Column, Limit, RelNode, Scan
from fluvial.table.planner.pushdown import conjuncts, push_into_sources
from fluvial.table.planner.rex import AggCall, Call, InputRef, Literal, Rex
from fluvial.table.types import DataTypes

pytestmark = pytest.mark.timeout(30)

INT, STRING, BOOL = DataTypes.INT(), DataTypes.STRING(), DataTypes.BOOLEAN()
COLUMNS = (Column("a", INT), Column("b", STRING), Column("c", INT))


@dataclass(frozen=True)
class FakeSource:
    """A source that accepts the conjuncts on column 0 only, and records what it was given."""

    columns: tuple[Column, ...] = COLUMNS
    projection: tuple[int, ...] | None = None
    filters: tuple[Rex, ...] = ()
    limit: int | None = None
    projects: bool = True

    def apply_filters(self, filters: tuple[Rex, ...]) -> tuple[FakeSource, tuple[Rex, ...]] | None:
        accepted = tuple(f for f in filters if _refs(f) == {0})
        if not accepted:
            return None
        return replace(self, filters=self.filters + accepted), tuple(f for f in filters if f not in accepted)

    def apply_projection(self, indices: tuple[int, ...]) -> FakeSource | None:
        return replace(self, projection=indices) if self.projects else None

    def apply_limit(self, limit: int) -> FakeSource | None:
        return replace(self, limit=limit)


def _refs(rex: Rex) -> set[int]:
    if isinstance(rex, InputRef):
        return {rex.index}
    if isinstance(rex, Call):
        return set().union(*(_refs(o) for o in rex.operands))
    return set()


def ref(i: int, columns: tuple[Column, ...] = COLUMNS) -> InputRef:
    return InputRef(i, columns[i].type, columns[i].name)


def gt(rex: Rex, value: int) -> Call:
    return Call("greater_than", (rex, Literal(value, INT)), BOOL)


def both(x: Rex, y: Rex) -> Call:
    return Call("and", (x, y), BOOL)


def scan(source: FakeSource | None = None) -> Scan:
    return Scan(COLUMNS, "t", source or FakeSource())


def test_accepted_conjuncts_go_to_the_source_and_the_rest_stay_in_a_calc_over_the_used_columns() -> None:
    calc = Calc((Column("b", STRING),), scan(), (ref(1),), both(gt(ref(0), 1), gt(ref(2), 5)))
    out = push_into_sources(calc)
    assert isinstance(out, Calc) and isinstance(out.input, Scan)
    source = out.input.source
    assert source.filters == (gt(ref(0), 1),)
    assert source.projection == (1, 2)  # b for the select, c for the remaining filter; a only the source reads
    assert out.input.names == ["b", "c"]
    assert out.condition == gt(InputRef(1, INT, "c"), 5)
    assert out.projections == (InputRef(0, STRING, "b"),)


def test_a_calc_left_projecting_the_scan_as_it_is_disappears() -> None:
    calc = Calc((Column("a", INT), Column("b", STRING)), scan(), (ref(0), ref(1)), gt(ref(0), 1))
    out = push_into_sources(calc)
    assert isinstance(out, Scan)
    assert out.source.projection == (0, 1) and out.source.filters == (gt(ref(0), 1),)


def test_non_deterministic_and_user_function_conjuncts_are_not_offered() -> None:
    rand = Call("greater_than", (Call("rand", (), DataTypes.DOUBLE()), Literal(0.5, DataTypes.DOUBLE())), BOOL)
    udf = Call("__udf__", (ref(0),), BOOL, function=object())
    calc = Calc(COLUMNS, scan(), None, both(both(rand, udf), gt(ref(0), 3)))
    out = push_into_sources(calc)
    assert isinstance(out, Calc)
    assert out.input.source.filters == (gt(ref(0), 3),)
    assert conjuncts(out.condition) == [rand, udf]


def test_disabled_predicate_pushdown_still_prunes_columns() -> None:
    calc = Calc((Column("c", INT),), scan(), (ref(2),), gt(ref(0), 1))
    out = push_into_sources(calc, filters_enabled=False)
    assert isinstance(out, Calc) and out.input.source.filters == ()
    assert out.input.source.projection == (0, 2)
    assert out.condition == gt(InputRef(0, INT, "a"), 1)


def test_an_aggregate_reads_its_keys_and_arguments_only() -> None:
    agg = AggCall("SUM", (2,), INT, "s")
    node = Aggregate((Column("b", STRING), Column("s", INT)), scan(), (1,), (agg,))
    out = push_into_sources(node)
    assert isinstance(out, Aggregate) and out.input.source.projection == (1, 2)
    assert out.group == (0,) and out.aggs[0].args == (1,)


def test_a_limit_reaches_the_source_through_a_projection() -> None:
    node = Limit((Column("a", INT),), Calc((Column("a", INT),), scan(), (ref(0),), None), 2, 3)
    out = push_into_sources(node)
    assert isinstance(out, Limit)  # the limit stays: the source's is a hint
    assert out.input.source.limit == 5 and out.input.source.projection == (0,)


def test_a_source_that_cannot_project_keeps_its_columns_and_plans_without_sources_are_unchanged() -> None:
    calc = Calc((Column("a", INT),), scan(FakeSource(projects=False)), (ref(0),), None)
    out = push_into_sources(calc)
    assert isinstance(out, Calc) and out.input.names == ["a", "b", "c"]
    plain: RelNode = Calc((Column("a", INT),), Scan(COLUMNS, "t", object()), (ref(0),), None)
    assert push_into_sources(plain) is plain


def test_where_conjuncts_on_one_side_of_a_join_move_below_it_and_reach_that_sides_source() -> None:
    from fluvial.table.planner.logical import Join

    right_columns = (Column("k", INT), Column("v", STRING))
    both_sides = COLUMNS + right_columns
    join = Join(both_sides, scan(), Scan(right_columns, "r", FakeSource(right_columns)), "INNER", (0,), (0,))
    on_left, on_right = gt(ref(0), 1), gt(InputRef(3, INT, "k"), 2)
    across = Call("equals", (ref(2), InputRef(3, INT, "k")), BOOL)
    where = both(both(on_left, on_right), across)
    out = push_into_sources(Calc(both_sides, join, None, where))
    assert isinstance(out, Calc) and out.condition == across
    assert out.input.left.source.filters == (on_left,)
    assert out.input.right.source.filters == (gt(InputRef(0, INT, "k"), 2),)
    # a LEFT join keeps a conjunct on its right side above it: it must drop the rows padded with NULLs
    outer = push_into_sources(Calc(both_sides, replace(join, join_type="LEFT"), None, both(on_left, on_right)))
    assert outer.condition == on_right and outer.input.left.source.filters == (on_left,)
    assert outer.input.right.source.filters == ()


def test_a_join_keeps_only_the_columns_read_above_it_and_its_keys() -> None:
    from fluvial.table.planner.logical import Join

    right_columns = (Column("k", INT), Column("v", STRING))
    both_sides = COLUMNS + right_columns
    join = Join(both_sides, scan(), Scan(right_columns, "r", FakeSource(right_columns)), "INNER", (0,), (0,))
    out = push_into_sources(Calc((Column("v", STRING),), join, (InputRef(4, STRING, "v"),), None))
    assert isinstance(out, Calc) and out.input.names == ["a", "k", "v"]  # a and k: the join's keys
    assert out.projections == (InputRef(2, STRING, "v"),)
    assert out.input.left.source.projection == (0,) and out.input.right.source.projection is None


# -- through the table environment, with the built-in connectors --------------------------------------------------


@pytest.fixture
def t_env(tmp_path):
    (tmp_path / "a.csv").write_text("1,x,5\n")
    t = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t.execute_sql(
        f"CREATE TABLE fs (a INT, b STRING, c BIGINT, d AS c * 2) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path}', 'format' = 'csv')"
    )
    t.execute_sql(
        "CREATE TABLE gen (a INT, b STRING, c BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
        "WITH ('connector' = 'datagen', 'number-of-rows' = '10')"
    )
    return t


def _optimized(t: TableEnvironment, query: str) -> RelNode:
    return t._optimize(t.sql_query(query)._node)


def _scan_of(node: RelNode) -> Scan:
    while not isinstance(node, Scan):
        node = node.inputs[0]
    return node


def test_filesystem_takes_the_filters_as_flink_does_and_the_columns(t_env) -> None:
    out = _optimized(t_env, "SELECT b FROM fs WHERE c > 10 AND d < 100")
    source = _scan_of(out).source
    # d is computed: its conjunct is offered rewritten over the physical column c (c * 2 < 100); the filesystem
    # source accepts them (to prune partitions) and leaves them all to the Calc, as Flink's does
    assert [f.op for f in source.filters] == ["greater_than", "less_than"]
    assert isinstance(out, Calc) and len(conjuncts(out.condition)) == 2
    assert source.projection == ((1,), (2,))  # b for the select, c for the filters


def test_datagen_takes_columns_and_limits_but_no_filters_and_keeps_the_watermark_column(t_env) -> None:
    out = _optimized(t_env, "SELECT a FROM gen WHERE c > 10 LIMIT 4")
    scan_node = _scan_of(out)
    assert scan_node.source.filters == () and scan_node.source.limit is None  # a filter before the limit
    assert [scan_node.source.columns[p[0]].name for p in scan_node.source.projection] == ["a", "c", "ts"]
    assert scan_node.watermark is not None and scan_node.names[scan_node.watermark.rowtime] == "ts"
    limited = _scan_of(_optimized(t_env, "SELECT a FROM gen LIMIT 4"))
    assert limited.source.limit == 4


def test_nexmark_takes_event_type_conjuncts_only() -> None:
    from fluvial.table.connectors.base import ConnectorContext
    from fluvial.table.connectors.nexmark import NexmarkFactory

    event_type = InputRef(0, INT, "event_type")
    wanted = Call("equals", (event_type, Literal(2, INT)), BOOL)
    among = Call("in", (event_type, Literal(0, INT), Literal(1, INT)), BOOL)
    other = gt(InputRef(1, INT, "x"), 1)
    result = NexmarkFactory().apply_filters(ConnectorContext("n", (), {}), (wanted, among, other))
    assert result.accepted == (wanted, among) and result.remaining == (other,)
