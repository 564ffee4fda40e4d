"""sqlglot expressions → fluvial's unresolved Expressions, with each one's line and column in the SQL text.

Positions come from the tokens sqlglot records on identifiers; an expression's position is that of its
first identifier, which is where Flink's messages point for an unknown column or a type mismatch.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp

from fluvial.table.errors import SqlParserException, ValidationException, at
from fluvial.table.expression import Expression, literal
from fluvial.table.sql.types import to_data_type
from fluvial.table.types import DataType, DataTypes

__all__ = ["Converter", "parse_expression", "parse_expression_list", "parse_error"]

_BINARY = {
    exp.Add: "plus",
    exp.Sub: "minus",
    exp.Mul: "times",
    exp.Div: "divide",
    exp.Mod: "mod",
    exp.EQ: "equals",
    exp.NEQ: "not_equals",
    exp.LT: "less_than",
    exp.LTE: "less_than_or_equal",
    exp.GT: "greater_than",
    exp.GTE: "greater_than_or_equal",
    exp.And: "and",
    exp.Or: "or",
    exp.DPipe: "concat",
}
_AGGREGATES = {
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
    exp.Count: "count",
    exp.Stddev: "stddev_samp",
    exp.StddevPop: "stddev_pop",
    exp.StddevSamp: "stddev_samp",
    exp.Variance: "var_samp",
    exp.VariancePop: "var_pop",
    exp.FirstValue: "first_value",
    exp.LastValue: "last_value",
}
_UNIT_MILLIS = {
    "MILLISECOND": 1,
    "SECOND": 1000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
    "WEEK": 7 * 86_400_000,
}
_UNIT_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}
_RENAMED = {
    "length": "char_length",
    "char_length": "char_length",
    "ceiling": "ceil",
    "pow": "power",
    "currenttimestamp": "current_timestamp",
    "currentdate": "current_date",
    "currenttime": "current_time",
    "stddev": "stddev_samp",
    "variance": "var_samp",
    "regexpreplace": "regexp_replace",
    "regexpextract": "regexp_extract",
    "datetostr": "date_format",
    "timetostr": "date_format",
    "strtotime": "to_timestamp",
    "strtodate": "to_date",
    "initcap": "initcap",
    "nullif": "nullif",
    "jsonextractscalar": "json_value",
    "jsonvalue": "json_value",
    "sha2": "sha256",
    "lpad": "lpad",
    "rpad": "rpad",
    "splitpart": "split_index",
    "unixtotime": "to_timestamp_ltz",
    "tobase64": "to_base64",
    "frombase64": "from_base64",
    "concatws": "concat_ws",
    "dayofmonth": "dayofmonth",
    "trycast": "try_cast",
}


def parse_error(error: sqlglot.ParseError, text: str) -> SqlParserException:
    """Flink's form: `SQL parse failed. Encountered "FROM" at line 1, column 12.`"""
    if not error.errors:
        return SqlParserException(f"SQL parse failed. {error}")
    first = error.errors[0]
    token = first.get("highlight") or ""
    line, column = first.get("line", 1), first.get("col", 1)
    column = max(1, column - len(token) + 1)
    description = first.get("description", "")
    detail = "" if "<class" in description else f" ({description})"
    return SqlParserException(f'SQL parse failed. Encountered "{token}" at line {line}, column {column}.{detail}')


class Converter:
    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    # -- positions ----------------------------------------------------------------------------------------------

    def position(self, node: exp.Expression | None) -> tuple[int, int] | None:
        if node is None:
            return None
        starts = [n._meta["start"] for n in node.walk() if "start" in (getattr(n, "_meta", None) or {})]
        if not starts:
            return None
        start = min(starts)
        line = max(i for i, s in enumerate(self.line_starts) if s <= start)
        return line + 1, start - self.line_starts[line] + 1

    def error(self, node: exp.Expression, message: str) -> ValidationException:
        return ValidationException(at(self.position(node), message))

    # -- expressions --------------------------------------------------------------------------------------------

    def expr(self, node: exp.Expression) -> Expression:
        e = self._expr(node)
        if e.sql_position is None:
            e.sql_position = self.position(node)
        return e

    def _call(self, name: str, *args: exp.Expression | Expression) -> Expression:
        return Expression("call", name, tuple(a if isinstance(a, Expression) else self.expr(a) for a in args))

    def _expr(self, node: exp.Expression) -> Expression:
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                return Expression("star")
            return Expression("field", node.name, value=node.table or None, sql_position=self.position(node))
        if isinstance(node, exp.Star):
            return Expression("star")
        if isinstance(node, exp.Alias):
            return Expression("alias", args=(self.expr(node.this),), aliases=(node.alias,))
        if isinstance(node, exp.Paren):
            return self.expr(node.this)
        if isinstance(node, exp.Literal):
            return self._literal(node)
        if isinstance(node, exp.Boolean):
            return literal(bool(node.this))
        if isinstance(node, exp.Null):
            return literal(None)
        if isinstance(node, exp.Interval):
            return self._interval(node)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self._cast(node)
        if type(node) in _BINARY:
            return self._call(_BINARY[type(node)], node.this, node.expression)
        if isinstance(node, exp.Neg):
            return self._call("minus_prefix", node.this)
        if isinstance(node, exp.Not):
            inner = node.this
            if isinstance(inner, exp.Is):
                return self._is(inner, negate=True)
            return self._call("not", inner)
        if isinstance(node, exp.Is):
            return self._is(node, negate=False)
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                raise self.error(node, "IN with a subquery is not supported yet; join the tables instead")
            return self._call("in", node.this, *node.expressions)
        if isinstance(node, exp.Between):
            return self._call("between", node.this, node.args["low"], node.args["high"])
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
            like = node.this
            e = self._call("like", like.this, like.expression, node.expression)
            return self._call("not", e) if like.args.get("negate") else e
        if isinstance(node, (exp.Like, exp.ILike)):
            e = self._call(
                "like",
                node.this if not isinstance(node, exp.ILike) else exp.Upper(this=node.this),
                node.expression if not isinstance(node, exp.ILike) else exp.Upper(this=node.expression),
            )
            return self._call("not", e) if node.args.get("negate") else e
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, exp.If):
            false = node.args.get("false")
            return self._call("if", node.this, node.args["true"], false if false is not None else exp.Null())
        if isinstance(node, exp.Bracket):
            return self._bracket(node)
        if isinstance(node, exp.Window):
            if isinstance(node.this, exp.RowNumber):
                raise self.error(node, "ROW_NUMBER() is planned in a subquery filtered by WHERE rn = 1 or rn <= N")
            if not node.args.get("partition_by") and not node.args.get("order"):
                raise self.error(node, "a named window (OVER w) is not supported yet: write the window inline")
            return Expression("call", "__over__", (self.expr(node.this),), value=node)
        if type(node) in _AGGREGATES:
            return self._aggregate(node)
        if isinstance(node, exp.Func):
            return self._function(node)
        raise self.error(node, f"fluvial's SQL does not support '{node.sql(dialect='postgres')}' yet")

    def _literal(self, node: exp.Literal) -> Expression:
        if node.is_string:
            return literal(node.this)
        text = str(node.this)
        if re.fullmatch(r"-?\d+", text):
            return literal(int(text))
        if "e" in text.lower():
            return literal(float(text), DataTypes.DOUBLE(False))
        value = Decimal(text)
        _, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        # Flink counts a fraction's leading zero: 0.908 is DECIMAL(4, 3)
        precision = max(len(digits), scale + 1 if abs(value) < 1 else scale, 1)
        return literal(value, DataTypes.DECIMAL(precision, scale, False))

    def _interval(self, node: exp.Interval) -> Expression:
        unit = (node.unit.name if node.unit is not None else "SECOND").upper().rstrip("S") if node.unit else "SECOND"
        unit = {"MILLISECOND": "MILLISECOND"}.get(unit, unit)
        value = node.this
        text = value.this if isinstance(value, exp.Literal) else value.sql()
        try:
            amount = Decimal(str(text).strip())
        except ArithmeticError:
            raise self.error(node, f"Illegal interval literal '{text}'") from None
        if unit in _UNIT_MONTHS:
            return Expression(
                "literal", value=int(amount) * _UNIT_MONTHS[unit], data_type=DataType("INTERVAL_YEAR_MONTH")
            )
        if unit not in _UNIT_MILLIS:
            raise self.error(node, f"unsupported interval unit {unit}")
        return Expression("literal", value=int(amount * _UNIT_MILLIS[unit]), data_type=DataType("INTERVAL_DAY_TIME"))

    def _cast(self, node: exp.Cast) -> Expression:
        to = node.args["to"]
        operand = node.this
        if (
            isinstance(operand, exp.Literal)
            and operand.is_string
            and not to.expressions
            and to.this in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATE, exp.DataType.Type.TIME)
        ):
            return self._typed_literal(operand.this, to.this, node)
        target = to_data_type(to)
        return Expression(
            "cast", "try_cast" if isinstance(node, exp.TryCast) else "cast", (self.expr(operand),), data_type=target
        )

    def _typed_literal(self, text: str, kind: Any, node: exp.Expression) -> Expression:
        try:
            if kind == exp.DataType.Type.DATE:
                return literal(_dt.date.fromisoformat(text), DataTypes.DATE(False))
            if kind == exp.DataType.Type.TIME:
                return literal(_dt.time.fromisoformat(text), DataTypes.TIME(0, False))
            value = _dt.datetime.fromisoformat(text.replace("T", " "))
        except ValueError:
            raise self.error(node, f"Illegal {kind.value} literal '{text}'") from None
        fraction = text.split(".")[1] if "." in text else ""
        return literal(value, DataTypes.TIMESTAMP(len(fraction), False))

    def _bracket(self, node: exp.Bracket) -> Expression:
        """`MAP[k1, v1, ...]` (Flink's MAP value constructor), or `value[index]` (an ARRAY's element from 1, a
        MAP's value for a key)."""
        target, keys = node.this, list(node.expressions)
        if isinstance(target, exp.Column) and not target.table and target.name.upper() == "MAP":
            if not target.this.args.get("quoted"):
                if not keys or len(keys) % 2:
                    raise self.error(
                        node,
                        f"Map requires an even number of arguments: MAP[key1, value1, key2, value2, ...] was "
                        f"given {len(keys)}",
                    )
                return self._call("map", *keys)
        if len(keys) != 1:
            raise self.error(node, "an index takes one key: arr[1] or m['key']")
        return self._call("item", target, keys[0])

    def _is(self, node: exp.Is, negate: bool) -> Expression:
        target = node.expression
        if isinstance(target, exp.Null):
            return self._call("is_not_null" if negate else "is_null", node.this)
        if isinstance(target, exp.Boolean):
            name = (
                ("is_not_true" if negate else "is_true") if target.this else ("is_not_false" if negate else "is_false")
            )
            return self._call(name, node.this)
        raise self.error(node, "IS takes NULL, TRUE or FALSE")

    def _case(self, node: exp.Case) -> Expression:
        subject = node.this
        args: list[Expression] = []
        for branch in node.args.get("ifs") or []:
            condition = branch.this
            cond = self._call("equals", subject, condition) if subject is not None else self.expr(condition)
            args.extend([cond, self.expr(branch.args["true"])])
        default = node.args.get("default")
        args.append(self.expr(default) if default is not None else literal(None))
        return Expression("call", "case", tuple(args))

    def _aggregate(self, node: exp.Expression) -> Expression:
        name = _AGGREGATES[type(node)]
        arg = node.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            arg = arg.expressions[0]
        if arg is None or isinstance(arg, exp.Star):
            call = Expression("call", name, (Expression("star"),))
        else:
            call = self._call(name, arg)
        call.sql_position = self.position(node)
        return Expression("call", "distinct", (call,)) if distinct else call

    def _function(self, node: exp.Func) -> Expression:
        from fluvial.table.planner.resolve import registered_functions

        written = str(node.this).lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()
        if written in registered_functions.get():
            args = list(node.expressions) if isinstance(node, exp.Anonymous) else self.function_args(node)
            return self._call(written, *args)
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
            args = list(node.expressions)
        else:
            name = node.sql_name().lower().replace("_", "") if False else type(node).__name__.lower()
            args = self.function_args(node)
        if isinstance(node, exp.Substring):
            args = [node.this, node.args.get("start") or exp.Literal.number(1)] + (
                [node.args["length"]] if node.args.get("length") is not None else []
            )
            name = "substring"
        elif isinstance(node, exp.Trim):
            position = str(node.args.get("position") or "BOTH").upper()
            chars = node.expression if node.expression is not None else exp.Literal.string(" ")
            name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
            args = [node.this, chars]
        elif isinstance(node, exp.StrPosition):
            name = "position"
            args = [node.args["substr"], node.this]
        elif isinstance(node, exp.Extract):
            unit = node.this.name.upper()
            return Expression(
                "call",
                "extract",
                (Expression("literal", value=unit, data_type=DataType("SYMBOL")), self.expr(node.expression)),
            )
        elif isinstance(node, exp.Round):
            args = [node.this] + ([node.args["decimals"]] if node.args.get("decimals") is not None else [])
        elif isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is not None:
            unit = node.args["to"].name.upper()
            return Expression(
                "call", name, (self.expr(node.this), Expression("literal", value=unit, data_type=DataType("SYMBOL")))
            )
        elif isinstance(node, exp.Coalesce):
            args = [node.this, *node.expressions]
        elif isinstance(node, exp.ConcatWs):
            args = list(node.expressions)
            name = "concat_ws"
        elif isinstance(node, exp.Concat):
            args = list(node.expressions)
            name = "concat"
        elif isinstance(node, exp.Pad):
            name = "lpad" if node.args.get("is_left") else "rpad"
            args = [node.this, node.expression, node.args.get("fill_pattern") or exp.Literal.string(" ")]
        elif isinstance(node, exp.Log):
            args = [a for a in (node.this, node.expression) if a is not None]
            name = "log" if len(args) == 2 else "ln"
        elif isinstance(node, exp.Ln):
            name = "ln"
        elif isinstance(node, (exp.CurrentTimestamp,)):
            name, args = "current_timestamp", []
        elif isinstance(node, exp.CurrentDate):
            name, args = "current_date", []
        elif isinstance(node, exp.CurrentTime):
            name, args = "current_time", []
        elif isinstance(node, exp.Initcap):
            name, args = "initcap", [node.this]
        elif isinstance(node, exp.Length):
            name = "char_length"
        elif isinstance(node, exp.Upper):
            name = "upper"
        elif isinstance(node, exp.Lower):
            name = "lower"
        elif isinstance(node, exp.Pow):
            name = "power"
        name = _RENAMED.get(name, name)
        return self._call(name, *args)

    @staticmethod
    def function_args(node: exp.Func) -> list[exp.Expression]:
        """A call's arguments in order, for a function sqlglot knows by name (its own expression class)."""
        args: list[exp.Expression] = []
        for key in node.arg_types:
            value = node.args.get(key)
            if value is None or isinstance(value, bool):
                continue
            if isinstance(value, list):
                args.extend(value)
            elif isinstance(value, exp.Expression):
                args.append(value)
        return args


def parse_expression(text: str) -> Expression:
    """One SQL expression (a computed column, a watermark, `call_sql`)."""
    from fluvial.table.sql.dialect import Flink

    try:
        node = (
            sqlglot.parse_one(text, dialect=Flink, into=exp.Expression)
            if False
            else sqlglot.parse_one(f"SELECT {text}", dialect=Flink).expressions[0]
        )
    except sqlglot.ParseError as error:
        raise parse_error(error, text) from None
    return Converter(f"SELECT {text}").expr(node)


def parse_expression_list(text: str) -> list[Expression]:
    """A select list written as text (`table.select("a, b + 1 AS c")`, PyFlink's string expressions)."""
    from fluvial.table.sql.dialect import Flink

    try:
        select = sqlglot.parse_one(f"SELECT {text}", dialect=Flink)
    except sqlglot.ParseError as error:
        raise parse_error(error, text) from None
    converter = Converter(f"SELECT {text}")
    return [converter.expr(e) for e in select.expressions]
