"""Projection, filter and limit push-down into table sources (Flink's PushProjectIntoTableSourceScanRule,
PushFilterIntoTableSourceScanRule, PushLimitIntoTableSourceScanRule), run on every plan before it is
translated or explained.

A Scan whose source can take them (`PushDownSource`: fluvial's connector tables, whose factories declare the
abilities of `fluvial.table.connectors.abilities`) is given:
- the WHERE conjuncts of the Calc right above it, deterministic ones only, computed columns replaced by their
  expressions (so the conjuncts read physical columns only); the source answers which it applies (accepted) and which a Calc must still apply (remaining);
- the columns its parent reads (a Calc's expressions and remaining condition, a GROUP BY's keys and aggregate
  arguments, a window aggregation's time column too), plus the watermark's columns: the source then produces
  only those, and unused computed columns are not computed;
- a LIMIT directly above it (or above a projection-only Calc), as a hint.
The parent's column references are renumbered; a Calc left projecting the scan's columns as they are, with no
condition, is removed. Plans without such scans come back unchanged (the same objects).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeGuard, runtime_checkable

from fluvial.table.planner.logical import (
    Aggregate,
    Calc,
    Correlate,
    Join,
    Limit,
    RelNode,
    Scan,
    SingleRel,
    Union,
    WatermarkSpec,
    WindowAggregate,
)
from fluvial.table.planner.rex import AggCall, Call, InputRef, Rex
from fluvial.table.types import DataTypes

__all__ = ["PushDownSource", "SourcePushDown", "push_into_sources", "conjuncts", "conjunction", "remap"]

# functions whose value is not a function of their operands (Flink pushes deterministic filters only)
_NON_DETERMINISTIC = frozenset(
    {
        "rand",
        "rand_integer",
        "uuid",
        "now",
        "proctime",
        "current_timestamp",
        "current_time",
        "current_date",
        "current_row_timestamp",
        "localtime",
        "localtimestamp",
        "unix_timestamp",
    }
)


@runtime_checkable
class PushDownSource(Protocol):
    """A scan's source the rule can push into (each method returns None when the source cannot)."""

    def apply_filters(self, filters: tuple[Rex, ...]) -> tuple[Any, tuple[Rex, ...]] | None: ...

    def apply_projection(self, indices: tuple[int, ...]) -> Any | None: ...

    def apply_limit(self, limit: int) -> Any | None: ...


def conjuncts(rex: Rex | None) -> list[Rex]:
    """The AND-ed parts of a condition."""
    if rex is None:
        return []
    if isinstance(rex, Call) and rex.op == "and" and rex.function is None:
        return conjuncts(rex.operands[0]) + conjuncts(rex.operands[1])
    return [rex]


def conjunction(parts: Sequence[Rex]) -> Rex | None:
    """The AND of `parts` (None for none)."""
    result: Rex | None = None
    for part in parts:
        result = part if result is None else Call("and", (result, part), DataTypes.BOOLEAN())
    return result


def _refs(rex: Rex | None, out: set[int]) -> set[int]:
    if isinstance(rex, InputRef):
        out.add(rex.index)
    elif isinstance(rex, Call):
        for operand in rex.operands:
            _refs(operand, out)
    return out


def _deterministic(rex: Rex) -> bool:
    if isinstance(rex, Call):
        if rex.function is not None or rex.op in _NON_DETERMINISTIC:
            return False
        return all(_deterministic(o) for o in rex.operands)
    return True


def remap(rex: Rex, mapping: dict[int, int]) -> Rex:
    """`rex` with input column i read as column mapping[i]."""
    if isinstance(rex, InputRef):
        return replace(rex, index=mapping[rex.index])
    if isinstance(rex, Call):
        return replace(rex, operands=tuple(remap(o, mapping) for o in rex.operands))
    return rex


def _substitute(rex: Rex, computed: tuple[Rex, ...]) -> Rex:
    """`rex` over a scan's columns rewritten over its physical columns (each column its computing rex)."""
    if isinstance(rex, InputRef):
        return computed[rex.index] if computed else rex
    if isinstance(rex, Call):
        return replace(rex, operands=tuple(_substitute(o, computed) for o in rex.operands))
    return rex


def push_into_sources(node: RelNode, filters_enabled: bool = True) -> RelNode:
    """The plan with everything its sources accept pushed into them."""
    return SourcePushDown(filters_enabled).rewrite(node)


class SourcePushDown:
    """One job's push-down: plans rewritten by one instance share their rewritten common subplans."""

    def __init__(self, filters_enabled: bool) -> None:
        self.filters_enabled = filters_enabled
        self._done: dict[int, RelNode] = {}  # a subplan used twice is rewritten once (translation keys on id)

    def rewrite(self, node: RelNode) -> RelNode:
        key = id(node)
        if key not in self._done:
            self._done[key] = self._rewrite(node)
        return self._done[key]

    def _rewrite(self, node: RelNode) -> RelNode:
        node = self._children(node)
        if isinstance(node, Calc) and isinstance(node.input, Calc):
            node = _merge(node, node.input)
        if isinstance(node, Calc) and node.condition is not None and type(node.input) is Join:
            node = self._through_join(node, node.input)
        if isinstance(node, Calc) and node.projections is not None and type(node.input) is Join:
            node = self._join_columns(node, node.input)
        if isinstance(node, Calc) and isinstance(node.input, Correlate) and _correlates_row(node.input):
            node = self._through_correlate(node, node.input)
        if isinstance(node, Calc) and _pushable(node.input):
            return self._calc(node, node.input)
        if isinstance(node, Calc) and node.condition is None and _is_identity(node.projections, node.input, node):
            return node.input  # a Calc that passes its input on as it is (Flink's CalcRemoveRule)
        if isinstance(node, (Aggregate, WindowAggregate)):
            return self._aggregation(node)
        if isinstance(node, Limit) and node.fetch is not None:
            return self._limit(node)
        return node

    def _children(self, node: RelNode) -> RelNode:
        if isinstance(node, SingleRel):
            child = self.rewrite(node.input)
            return node if child is node.input else replace(node, input=child)
        if isinstance(node, Union):
            children = tuple(self.rewrite(c) for c in node.children)
            return node if children == node.children else replace(node, children=children)
        if isinstance(node, Join):
            left, right = self.rewrite(node.left), self.rewrite(node.right)
            return node if left is node.left and right is node.right else replace(node, left=left, right=right)
        return node

    # -- Calc over a scan: filters, then the columns the Calc reads ---------------------------------------------

    def _calc(self, calc: Calc, scan: Scan) -> RelNode:
        remaining = conjuncts(calc.condition)
        if self.filters_enabled and remaining:
            scan, remaining = self._filters(scan, remaining)
        used: set[int] = set()
        if calc.projections is None:
            used.update(range(len(scan.schema)))
        for rex in calc.projections or ():
            _refs(rex, used)
        for rex in remaining:
            _refs(rex, used)
        pruned, mapping = self._project(scan, used)
        projections = None if calc.projections is None else tuple(remap(r, mapping) for r in calc.projections)
        condition = conjunction([remap(r, mapping) for r in remaining])
        if condition is None and _is_identity(projections, pruned, calc):
            return pruned
        return replace(calc, input=pruned, projections=projections, condition=condition)

    def _filters(self, scan: Scan, parts: list[Rex]) -> tuple[Scan, list[Rex]]:
        """Offers the deterministic conjuncts over physical columns; returns the scan with the accepted ones and
        the conjuncts the Calc keeps (as they were, over the scan's columns)."""
        offered: dict[int, Rex] = {}
        for i, part in enumerate(parts):
            substituted = _substitute(part, scan.computed)  # computed columns read as their expressions
            if _deterministic(substituted):
                offered[i] = substituted
        if not offered:
            return scan, parts
        answer = scan.source.apply_filters(tuple(offered.values()))
        if answer is None:
            return scan, parts
        source, still = answer
        kept = [part for i, part in enumerate(parts) if i not in offered or offered[i] in still]
        return replace(scan, source=source), kept

    def _through_join(self, calc: Calc, join: Join) -> Calc:
        """The WHERE conjuncts that read one side of a regular join only, moved below it onto that side (Flink's
        FilterJoinRule), where they may reach the side's source: the preserved side of an outer join only (a
        conjunct on the other side would drop the rows the join pads with NULLs)."""
        width = len(join.left.schema)
        sides: tuple[list[Rex], list[Rex]] = ([], [])
        kept: list[Rex] = []
        for part in conjuncts(calc.condition):
            refs = _refs(part, set())
            if refs and _deterministic(part) and max(refs) < width and join.join_type in ("INNER", "LEFT"):
                sides[0].append(part)
            elif refs and _deterministic(part) and min(refs) >= width and join.join_type in ("INNER", "RIGHT"):
                sides[1].append(remap(part, {i: i - width for i in refs}))
            else:
                kept.append(part)
        if not sides[0] and not sides[1]:
            return calc
        left, right = (
            self._rewrite(Calc(child.schema, child, None, conjunction(parts))) if parts else child
            for child, parts in ((join.left, sides[0]), (join.right, sides[1]))
        )
        return replace(calc, input=replace(join, left=left, right=right), condition=conjunction(kept))

    def _join_columns(self, calc: Calc, join: Join) -> Calc:
        """Each side of a regular join reduced to the columns the join and the Calc above it read (Flink's
        ProjectJoinTransposeRule): less state per stored row, and the projections may reach the sources."""
        assert calc.projections is not None
        width = len(join.left.schema)
        needed: set[int] = set(join.left_keys) | {k + width for k in join.right_keys}
        for rex in (*calc.projections, calc.condition, join.condition):
            _refs(rex, needed)
        left_keep = sorted(i for i in needed if i < width) or [0]
        right_keep = sorted(i - width for i in needed if i >= width) or [0]
        if len(left_keep) == width and len(right_keep) == len(join.right.schema):
            return calc
        left, right = (
            child
            if len(keep) == len(child.schema)
            else self._rewrite(
                Calc(
                    tuple(child.schema[i] for i in keep),
                    child,
                    tuple(InputRef(i, child.schema[i].type, child.schema[i].name) for i in keep),
                    None,
                )
            )
            for child, keep in ((join.left, left_keep), (join.right, right_keep))
        )
        kept = [*left_keep, *(width + j for j in right_keep)]
        mapping = {old: new for new, old in enumerate(kept)}
        side = {old: new for new, old in enumerate(right_keep)}
        pruned = replace(
            join,
            schema=tuple(join.schema[i] for i in kept),
            left=left,
            right=right,
            left_keys=tuple(mapping[k] for k in join.left_keys),
            right_keys=tuple(side[k] for k in join.right_keys),
            condition=None if join.condition is None else remap(join.condition, mapping),
        )
        return replace(
            calc,
            input=pruned,
            projections=tuple(remap(r, mapping) for r in calc.projections),
            condition=None if calc.condition is None else remap(calc.condition, mapping),
        )

    def _through_correlate(self, calc: Calc, correlate: Correlate) -> Calc:
        """Below a table function (LATERAL TABLE, UNNEST, join_lateral): the WHERE conjuncts that read the input's
        columns only (the function is then called for fewer rows, and they may reach the source), and a
        projection of the input to the columns the function's arguments, its condition and the Calc read."""
        width = len(correlate.input.schema)
        below: list[Rex] = []
        kept: list[Rex] = []
        for part in conjuncts(calc.condition):
            refs = _refs(part, set())
            (below if refs and max(refs) < width and _deterministic(part) else kept).append(part)
        child = correlate.input
        if below:
            child = Calc(child.schema, child, None, conjunction(below))
        needed: set[int] = set()
        for rex in (*(calc.projections or ()), *kept, *(correlate.operands or ()), correlate.condition):
            _refs(rex, needed)
        keep = [i for i in range(width) if i in needed or calc.projections is None]
        if not keep:
            keep = [0] if width else []
        if len(keep) == width and not below:
            return calc
        if len(keep) < width:
            child = Calc(
                tuple(child.schema[i] for i in keep),
                child,
                tuple(InputRef(i, child.schema[i].type, child.schema[i].name) for i in keep),
                None,
            )
        mapping = {old: new for new, old in enumerate(keep)}
        mapping.update({width + j: len(keep) + j for j in range(len(correlate.schema) - width)})
        pruned = replace(
            correlate,
            schema=tuple(correlate.schema[i] for i in sorted(mapping)),
            input=self._rewrite(child),
            operands=None if correlate.operands is None else tuple(remap(r, mapping) for r in correlate.operands),
            condition=None if correlate.condition is None else remap(correlate.condition, mapping),
        )
        return replace(
            calc,
            input=pruned,
            projections=None if calc.projections is None else tuple(remap(r, mapping) for r in calc.projections),
            condition=conjunction([remap(r, mapping) for r in kept]),
        )

    # -- projection ---------------------------------------------------------------------------------------------

    def _project(self, scan: Scan, used: set[int], first: tuple[int, ...] = ()) -> tuple[Scan, dict[int, int]]:
        """The scan producing only columns `used` (and its watermark's), columns `first` first, then the others
        in their order; with the renumbering of its columns."""
        if scan.watermark is not None:
            used = used | {scan.watermark.rowtime} | _refs(scan.watermark.expression, set())
        identity = {i: i for i in range(len(scan.schema))}
        if len(used) == len(scan.schema):
            return scan, identity
        kept = [*dict.fromkeys(first), *sorted(used - set(first))]
        if not kept:  # SELECT COUNT(*): Flink keeps one column to count rows of
            kept = [0]
        mapping = {old: new for new, old in enumerate(kept)}
        physical_used: set[int] = set()
        for i in kept:
            _refs(scan.computed[i], physical_used) if scan.computed else physical_used.add(i)
        physical = sorted(physical_used)
        width = len(scan.source.columns) + len(getattr(scan.source, "metadata", ()))  # metadata values come last
        source = scan.source
        if len(physical) < width:
            projected = scan.source.apply_projection(tuple(physical))
            if projected is not None:
                source = projected
            elif not scan.computed:  # the connector produces every column, and no computed one is to skip
                return scan, identity
            else:  # only the unused computed columns are pruned
                physical = list(range(width))
        physical_mapping = {old: new for new, old in enumerate(physical)}
        if scan.computed:
            computed = tuple(remap(scan.computed[i], physical_mapping) for i in kept)
        else:
            computed = tuple(InputRef(physical_mapping[i], scan.schema[i].type, scan.schema[i].name) for i in kept)
        if all(isinstance(r, InputRef) and r.index == n for n, r in enumerate(computed)) and len(computed) == len(
            physical
        ):
            computed = ()
        watermark = scan.watermark
        if watermark is not None:
            watermark = WatermarkSpec(mapping[watermark.rowtime], remap(watermark.expression, mapping), watermark.text)
        schema = tuple(scan.schema[i] for i in kept)
        return replace(scan, schema=schema, source=source, computed=computed, watermark=watermark), mapping

    def _aggregation(self, node: Aggregate | WindowAggregate) -> RelNode:
        """The columns a GROUP BY reads pushed into the scan under it, read directly or through a Calc that only
        picks columns (Flink's plan has no Calc there). The runtime takes the group keys from the first columns
        of its input, so the scan produces them first; when it cannot, the plan stays as it was."""
        child = node.input
        if isinstance(child, Calc) and _is_reordering(child) and _pushable(child.input):
            pushed = self._aggregate(_read_through(node, child), child.input)
            if pushed is not None:
                return pushed
        if _pushable(child):
            pushed = self._aggregate(node, child)
            if pushed is not None and pushed.inputs[0] is not child:
                return pushed
        return node

    def _aggregate(self, node: RelNode, scan: Scan) -> RelNode | None:
        assert isinstance(node, (Aggregate, WindowAggregate))
        used = set(node.group)
        for agg in node.aggs:
            used.update(agg.args)
            if agg.filter_arg is not None:
                used.add(agg.filter_arg)
        if isinstance(node, WindowAggregate):
            used.add(node.window.time_index)
            used.update(node.window.partition)
        pruned, mapping = self._project(scan, used, node.group)
        if [mapping[g] for g in node.group] != list(range(len(node.group))):
            return None
        return _remapped(node, pruned, mapping)

    # -- limit --------------------------------------------------------------------------------------------------

    def _limit(self, limit: Limit) -> RelNode:
        assert limit.fetch is not None
        child = limit.input
        calc = child if isinstance(child, Calc) and child.condition is None else None
        scan = calc.input if calc is not None else child
        if not _pushable(scan) or getattr(scan.source, "filters", None):
            return limit
        source = scan.source.apply_limit(limit.offset + limit.fetch)
        if source is None:
            return limit
        new_scan = replace(scan, source=source)
        return replace(limit, input=new_scan if calc is None else replace(calc, input=new_scan))


def _remapped(node: Aggregate | WindowAggregate, new_input: RelNode, mapping: dict[int, int]) -> RelNode:
    """The aggregation reading `new_input`, where its input's column i is column mapping[i]."""
    aggs = tuple(_remap_agg(a, mapping) for a in node.aggs)
    group = tuple(mapping[g] for g in node.group)
    if isinstance(node, WindowAggregate):
        window = replace(
            node.window,
            time_index=mapping[node.window.time_index],
            partition=tuple(mapping[p] for p in node.window.partition),
        )
        return replace(node, input=new_input, group=group, aggs=aggs, window=window)
    return replace(node, input=new_input, group=group, aggs=aggs)


def _correlates_row(correlate: Correlate) -> bool:
    """Whether a Correlate keeps its input's columns and calls its function with some of them (not the whole
    row, as `flat_map(f)` does): then its input can be filtered and narrowed below it."""
    return correlate.keep_input and correlate.operands is not None


def _is_reordering(node: RelNode) -> bool:
    """A Calc that only picks, reorders or renames its input's columns."""
    return (
        isinstance(node, Calc)
        and node.condition is None
        and node.projections is not None
        and all(isinstance(r, InputRef) for r in node.projections)
    )


def _read_through(node: Aggregate | WindowAggregate, calc: Calc) -> RelNode:
    """The aggregation reading the Calc's input directly (Flink's projection merged into the aggregate)."""
    assert calc.projections is not None
    mapping = {i: r.index for i, r in enumerate(calc.projections) if isinstance(r, InputRef)}
    return _remapped(node, calc.input, mapping)


def _merge(outer: Calc, inner: Calc) -> Calc:
    """Two Calcs as one (Flink's FlinkCalcMergeRule: one function call a row instead of two), when neither calls
    a user function and the inner one's expressions are deterministic (the outer one may read them twice)."""
    rexes = [*(inner.projections or ()), *(outer.projections or ()), inner.condition, outer.condition]
    if not all(r is None or _deterministic(r) for r in rexes):
        return outer
    if inner.condition is not None and outer.condition is not None:  # the generated AND evaluates both sides
        return outer
    if inner.projections is None:
        projections = outer.projections
        condition = conjunction(conjuncts(inner.condition) + conjuncts(outer.condition))
    else:
        below = inner.projections
        projections = (
            tuple(InputRef(i, r.type, c.name) for i, (r, c) in enumerate(zip(below, inner.schema)))
            if outer.projections is None
            else outer.projections
        )
        projections = tuple(_substitute(r, below) for r in projections)
        outer_condition = [_substitute(r, below) for r in conjuncts(outer.condition)]
        condition = conjunction(conjuncts(inner.condition) + outer_condition)
    return replace(outer, input=inner.input, projections=projections, condition=condition)


def _pushable(node: RelNode) -> TypeGuard[Scan]:
    return isinstance(node, Scan) and isinstance(node.source, PushDownSource)


def _is_identity(projections: tuple[Rex, ...] | None, scan: RelNode, calc: Calc) -> bool:
    if projections is None:
        return True
    return (
        len(projections) == len(scan.schema)
        and all(isinstance(r, InputRef) and r.index == i for i, r in enumerate(projections))
        and calc.names == scan.names
    )


def _remap_agg(agg: AggCall, mapping: dict[int, int]) -> AggCall:
    return replace(
        agg,
        args=tuple(mapping[a] for a in agg.args),
        filter_arg=None if agg.filter_arg is None else mapping[agg.filter_arg],
    )
