"""Accumulators of the built-in aggregate functions, with retraction (Flink's `*WithRetract` functions).

An accumulator is a small list (picklable, so it lives in keyed state as it is); `accumulate` and `retract`
change it in place; `value` reads the result. MIN and MAX keep a count per value so a retraction can remove
the current extreme, as Flink's MinWithRetractAggFunction does with its MapView.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from fluvial.common.row import RowKind, _create_row
from fluvial.table.planner.rex import AggCall
from fluvial.table.values import float32

__all__ = ["Aggregator", "AggregateSet", "aggregator_for", "mergeable"]


class Aggregator:
    """One aggregate over argument positions `args` of the input values."""

    def __init__(self, call: AggCall) -> None:
        self.args = call.args
        self.distinct = call.distinct
        self.kind = call.kind
        self.result_type = call.type

    def create(self) -> list:
        return [0, None]

    def accumulate(self, acc: list, value: Any) -> None:
        raise NotImplementedError

    def retract(self, acc: list, value: Any) -> None:
        raise NotImplementedError

    def value(self, acc: list) -> Any:
        raise NotImplementedError

    def merge(self, acc: list, other: list) -> None:
        raise NotImplementedError


class _Count(Aggregator):
    def create(self) -> list:
        return [0]

    def accumulate(self, acc: list, value: Any) -> None:
        if self.args and value is None:
            return
        acc[0] += 1

    def retract(self, acc: list, value: Any) -> None:
        if self.args and value is None:
            return
        acc[0] -= 1

    def value(self, acc: list) -> Any:
        return acc[0]

    def merge(self, acc: list, other: list) -> None:
        acc[0] += other[0]


class _Sum(Aggregator):
    """[count of non-null values, sum]; SUM of no values is NULL, SUM0 is 0. A FLOAT sum is rounded to 32 bits
    after every step, as Java's float arithmetic does (so 53.1 + 30.2 + 3.1 is 86.399994, as in Flink)."""

    def create(self) -> list:
        return [0, 0]

    def accumulate(self, acc: list, value: Any) -> None:
        if value is not None:
            acc[0] += 1
            acc[1] = float32(acc[1] + value) if self.result_type.name == "FLOAT" else acc[1] + value

    def retract(self, acc: list, value: Any) -> None:
        if value is not None:
            acc[0] -= 1
            acc[1] = float32(acc[1] - value) if self.result_type.name == "FLOAT" else acc[1] - value

    def value(self, acc: list) -> Any:
        total = acc[1]
        if self.result_type.name in ("FLOAT", "DOUBLE"):
            total = float(total)
        if self.kind == "SUM0":
            return total
        return total if acc[0] > 0 else None

    def merge(self, acc: list, other: list) -> None:
        acc[0] += other[0]
        acc[1] += other[1]


class _Avg(_Sum):
    def value(self, acc: list) -> Any:
        if acc[0] == 0:
            return None
        total, count = acc[1], acc[0]
        if self.result_type.is_integral():
            quotient = abs(total) // count
            return quotient if total >= 0 else -quotient
        if isinstance(total, Decimal):
            return (total / count).quantize(Decimal(1).scaleb(-(self.result_type.scale or 6)))
        return total / count


class _MinMax(Aggregator):
    """[{value: count}]: a retraction of the current extreme finds the next one. A count may go below zero (a
    local aggregate's batch retracts a value another batch added, as Flink's MinWithRetractAggFunction keeps
    it); the result is the extreme of the values counted above zero."""

    def create(self) -> list:
        return [{}]

    def accumulate(self, acc: list, value: Any) -> None:
        if value is not None:
            counts = acc[0]
            count = counts.get(value, 0) + 1
            if count:
                counts[value] = count
            else:
                del counts[value]

    def retract(self, acc: list, value: Any) -> None:
        if value is None:
            return
        counts = acc[0]
        count = counts.get(value, 0) - 1
        if count:
            counts[value] = count
        else:
            del counts[value]

    def value(self, acc: list) -> Any:
        present = [v for v, c in acc[0].items() if c > 0]
        if not present:
            return None
        return min(present) if self.kind == "MIN" else max(present)

    def merge(self, acc: list, other: list) -> None:
        counts = acc[0]
        for v, c in other[0].items():
            count = counts.get(v, 0) + c
            if count:
                counts[v] = count
            else:
                counts.pop(v, None)


class _FirstLast(Aggregator):
    """[[values in arrival order]]: retraction removes one occurrence."""

    def create(self) -> list:
        return [[]]

    def accumulate(self, acc: list, value: Any) -> None:
        if value is not None:
            acc[0].append(value)

    def retract(self, acc: list, value: Any) -> None:
        if value is not None and value in acc[0]:
            acc[0].remove(value)

    def value(self, acc: list) -> Any:
        if not acc[0]:
            return None
        return acc[0][0] if self.kind == "FIRST_VALUE" else acc[0][-1]

    def merge(self, acc: list, other: list) -> None:
        acc[0].extend(other[0])


class _Variance(Aggregator):
    """[count, sum, sum of squares]."""

    def create(self) -> list:
        return [0, 0.0, 0.0]

    def accumulate(self, acc: list, value: Any) -> None:
        if value is not None:
            acc[0] += 1
            acc[1] += float(value)
            acc[2] += float(value) ** 2

    def retract(self, acc: list, value: Any) -> None:
        if value is not None:
            acc[0] -= 1
            acc[1] -= float(value)
            acc[2] -= float(value) ** 2

    def value(self, acc: list) -> Any:
        n, s, sq = acc
        sample = self.kind.endswith("SAMP")
        if n == 0 or sample and n == 1:
            return None
        variance = max(sq - s * s / n, 0.0) / (n - 1 if sample else n)
        return math.sqrt(variance) if self.kind.startswith("STDDEV") else variance

    def merge(self, acc: list, other: list) -> None:
        for i in range(3):
            acc[i] += other[i]


class _ListAgg(_FirstLast):
    def value(self, acc: list) -> Any:
        return ",".join(str(v) for v in acc[0]) if acc[0] else None


class _UserAggregate(Aggregator):
    """A udaf (`fluvial.table.udf.AggregateFunction`): its own accumulator, changed in place by its methods."""

    def __init__(self, call: AggCall) -> None:
        from fluvial.table.udf import FunctionContext

        super().__init__(call)
        self.function = call.function._func
        self.function.open(FunctionContext())
        if call.function._row_names is not None:  # `aggregate(f)` with no arguments: f takes a Row of every column
            self._row_names = list(call.function._row_names)
            self.accumulate = self._accumulate_row  # type: ignore[method-assign]
            self.retract = self._retract_row  # type: ignore[method-assign]

    def _accumulate_row(self, acc: Any, value: Any) -> None:
        self.function.accumulate(acc, _create_row(self._row_names, list(value), RowKind.INSERT))

    def _retract_row(self, acc: Any, value: Any) -> None:
        self.function.retract(acc, _create_row(self._row_names, list(value), RowKind.INSERT))

    def create(self) -> Any:
        return self.function.create_accumulator()

    def accumulate(self, acc: Any, value: Any) -> None:
        self.function.accumulate(acc, *value)

    def retract(self, acc: Any, value: Any) -> None:
        self.function.retract(acc, *value)

    def value(self, acc: Any) -> Any:
        return self.function.get_value(acc)

    def merge(self, acc: Any, other: Any) -> None:
        self.function.merge(acc, [other])


class _PandasAggregate(Aggregator):
    """A vectorized (pandas) udaf: the accumulator is the window's argument tuples; the result is one call of the
    function with a pandas.Series per argument (numpy scalars come back as Python values)."""

    def __init__(self, call: AggCall) -> None:
        super().__init__(call)
        self.function = call.function._func
        self.arg_types = tuple(call.arg_types)

    def create(self) -> list:
        return []

    def accumulate(self, acc: list, value: Any) -> None:
        acc.append(value)

    def retract(self, acc: list, value: Any) -> None:
        if value in acc:
            acc.remove(value)

    def value(self, acc: list) -> Any:
        from fluvial.table.runtime.pandas_calc import pandas_series

        columns = list(zip(*acc)) if acc else [() for _ in self.args]
        result = self.function(*(pandas_series(c, t) for c, t in zip(columns, self.arg_types)))
        return result.item() if hasattr(result, "item") else result

    def merge(self, acc: list, other: list) -> None:
        acc.extend(other)


def _user_aggregate(call: AggCall) -> Aggregator:
    return _PandasAggregate(call) if call.function._pandas else _UserAggregate(call)


_KINDS: dict[str, Any] = {
    "UDAF": _user_aggregate,
    "COUNT": _Count,
    "SUM": _Sum,
    "SUM0": _Sum,
    "AVG": _Avg,
    "MIN": _MinMax,
    "MAX": _MinMax,
    "FIRST_VALUE": _FirstLast,
    "LAST_VALUE": _FirstLast,
    "STDDEV_POP": _Variance,
    "STDDEV_SAMP": _Variance,
    "VAR_POP": _Variance,
    "VAR_SAMP": _Variance,
    "LISTAGG": _ListAgg,
}


def aggregator_for(call: AggCall) -> Aggregator:
    return _KINDS[call.kind](call)


# built-in aggregates whose accumulators merge whatever the order of rows (FIRST_VALUE, LAST_VALUE and LISTAGG
# depend on arrival order across batches, so they stay in one phase)
_MERGEABLE = frozenset(
    {"COUNT", "SUM", "SUM0", "AVG", "MIN", "MAX", "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP"}
)


def mergeable(call: AggCall) -> bool:
    """Whether `call` can run as a local and a global aggregate (Flink's two-phase condition): a built-in with
    a merge, or a (non-vectorized) udaf that defines `merge`; DISTINCT aggregates stay in one phase."""
    if call.distinct:
        return False
    if call.kind == "UDAF":
        from fluvial.table.udf import overrides

        return not call.function._pandas and overrides(call.function._func, "merge")
    return call.kind in _MERGEABLE


class AggregateSet:
    """The aggregates of one operator over one group: accumulators, with DISTINCT's per-value counts."""

    def __init__(self, calls: Sequence[AggCall]) -> None:
        self.aggregators = [aggregator_for(c) for c in calls]
        if not any(a.distinct for a in self.aggregators):  # the per-row path as straight-line code
            compiled = _compiled(self.aggregators)
            self.create, self.accumulate, self.retract, self.values = compiled  # type: ignore[method-assign]

    def create(self) -> list:
        """[accumulators..., distinct counts per aggregate (dict) or None]."""
        return [[a.create() for a in self.aggregators], [({} if a.distinct else None) for a in self.aggregators]]

    def _arg(self, agg: Aggregator, values: Sequence[Any]) -> Any:
        args = agg.args
        if agg.kind == "UDAF":
            return tuple(values[a] for a in args)
        if not args:
            return 1
        return values[args[0]]

    def accumulate(self, state: list, values: Sequence[Any]) -> None:
        accs, distincts = state
        for i, agg in enumerate(self.aggregators):
            value = self._arg(agg, values)
            seen = distincts[i]
            if seen is not None:
                if value is None:
                    continue
                count = seen.get(value, 0)
                seen[value] = count + 1
                if count:
                    continue
            agg.accumulate(accs[i], value)

    def retract(self, state: list, values: Sequence[Any]) -> None:
        accs, distincts = state
        for i, agg in enumerate(self.aggregators):
            value = self._arg(agg, values)
            seen = distincts[i]
            if seen is not None:
                if value is None:
                    continue
                count = seen.get(value, 0) - 1
                if count > 0:
                    seen[value] = count
                    continue
                seen.pop(value, None)
            agg.retract(accs[i], value)

    def values(self, state: list) -> list:
        return [agg.value(acc) for agg, acc in zip(self.aggregators, state[0])]

    def merge(self, state: list, other: list) -> None:
        for i, agg in enumerate(self.aggregators):
            if state[1][i] is not None:
                for v, c in other[1][i].items():
                    if v not in state[1][i]:
                        agg.accumulate(state[0][i], v)
                    state[1][i][v] = state[1][i].get(v, 0) + c
            else:
                agg.merge(state[0][i], other[0][i])


def _compiled(aggregators: Sequence[Aggregator]) -> tuple[Any, Any, Any, Any]:
    """`create`, `accumulate`, `retract` and `values` of a set without DISTINCT, as generated functions: COUNT and
    integral or DOUBLE sums inline, any other aggregate one call of its bound method (no per-aggregate loop,
    argument lookup or DISTINCT check per row). The same steps as the aggregators' methods, in the same order."""
    namespace: dict[str, Any] = {}
    body: dict[str, list[str]] = {"accumulate": [], "retract": []}
    results, creates = [], []
    for i, agg in enumerate(aggregators):
        if agg.kind == "COUNT" or agg.kind in ("SUM", "SUM0", "AVG"):
            creates.append(repr(agg.create()))
        else:
            namespace[f"create{i}"] = agg.create
            creates.append(f"create{i}()")
        args = agg.args
        if agg.kind == "UDAF":
            arg = "(" + "".join(f"values[{a}], " for a in args) + ")"
        else:
            arg = f"values[{args[0]}]" if args else "1"
        inline_sum = agg.kind in ("SUM", "SUM0", "AVG") and agg.result_type.name != "FLOAT"
        for method, sign in (("accumulate", "+"), ("retract", "-")):
            lines = body[method]
            if agg.kind == "COUNT":
                step = f"accs[{i}][0] {sign}= 1"
                lines.append(f"    if values[{args[0]}] is not None: {step}" if args else f"    {step}")
            elif inline_sum:
                lines += [
                    f"    v = {arg}",
                    "    if v is not None:",
                    f"        a = accs[{i}]; a[0] {sign}= 1; a[1] {sign}= v",
                ]
            else:
                namespace[f"{method}{i}"] = getattr(agg, method)
                lines.append(f"    {method}{i}(accs[{i}], {arg})")
        if agg.kind == "COUNT":
            results.append(f"accs[{i}][0]")
        else:
            namespace[f"value{i}"] = agg.value
            results.append(f"value{i}(accs[{i}])")
    source = [
        *(f"def {m}(state, values):\n    accs = state[0]\n" + "\n".join(body[m] or ["    pass"]) for m in body),
        f"def values(state):\n    accs = state[0]\n    return [{', '.join(results)}]",
        f"def create():\n    return [[{', '.join(creates)}], {[None] * len(aggregators)!r}]",
    ]
    exec("\n".join(source), namespace)  # noqa: S102 - source built from the planner's aggregate calls
    return namespace["create"], namespace["accumulate"], namespace["retract"], namespace["values"]
