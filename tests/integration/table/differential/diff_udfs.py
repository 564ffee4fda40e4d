"""The user-defined functions the differential suite creates with `CREATE FUNCTION ... LANGUAGE PYTHON`: one
module both engines import (`python.files` names it), built from PyFlink's classes when PyFlink runs it (the
recorder, its Python workers) and from fluvial's otherwise."""

from __future__ import annotations

import sys

if "pyflink" in sys.modules:
    from pyflink.table import DataTypes
    from pyflink.table.udf import AggregateFunction, udaf, udf, udtf
else:
    from fluvial.table import DataTypes
    from fluvial.table.udf import AggregateFunction, udaf, udf, udtf


@udf(result_type=DataTypes.DOUBLE())
def plus_tax(amount):
    return None if amount is None else round(amount * 1.25, 4)


@udf(result_type=DataTypes.BOOLEAN(), func_type="pandas")
def above_tier(qty, tier):
    return qty > tier


class TotalQty(AggregateFunction):
    """SUM of a nullable INT as a BIGINT, NULLs skipped (0 for a group of NULLs)."""

    def create_accumulator(self):
        return [0]

    def accumulate(self, accumulator, qty):
        if qty is not None:
            accumulator[0] += qty

    def retract(self, accumulator, qty):
        if qty is not None:
            accumulator[0] -= qty

    def get_value(self, accumulator):
        return accumulator[0]

    def get_result_type(self):
        return DataTypes.BIGINT()

    def get_accumulator_type(self):
        return DataTypes.ARRAY(DataTypes.BIGINT())


total_qty = udaf(TotalQty())  # PyFlink's DDL takes a wrapper: a bare class "cannot be instantiated" there


@udtf(result_types=[DataTypes.STRING(), DataTypes.INT()])
def split_words(line):
    """Each word of a line and its length; no rows for an empty or NULL line."""
    for word in (line or "").split():
        yield word, len(word)


@udtf(result_types=[DataTypes.INT()])
def count_to(n):
    """0, 1, ..., n - 1; no rows for NULL or n <= 0."""
    yield from range(n or 0)
