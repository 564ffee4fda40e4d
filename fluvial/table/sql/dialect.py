"""Flink's SQL dialect for sqlglot.

sqlglot has no Flink dialect; RisingWave's (a streaming Postgres) parses Flink's DDL — `WATERMARK FOR ts AS
...`, `WITH ('k' = 'v')`, `PRIMARY KEY (..) NOT ENFORCED`, computed columns — so this dialect starts there
and adds what Flink has that it lacks:
- backquoted identifiers (`` `user` ``), as Flink's parser quotes them;
- window table functions: `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))` — the `TABLE`
  keyword before a table argument is dropped by the tokenizer, so the call parses as a function of the
  table's name, which the planner reads as a table; `TABLE t PARTITION BY k` (SESSION's partitioned table
  argument, Flink 2.x) becomes the two arguments `t, PARTITION_BY(k)`;
- `STRING` and `BYTES` types (parsed as TEXT and VARBINARY, mapped back by `fluvial.table.sql.types`);
- `ROW<name type, ...>` types (read as sqlglot's STRUCT: a ROW keyword right before `<`);
- `arr[i]` and `m[key]` keep their index as written (Flink's arrays are 1-based); `MAP['k', v, ...]` parses as
  an index of a column named MAP, which the converter reads as the MAP value constructor;
- metadata columns: `name TYPE METADATA [FROM 'key'] [VIRTUAL]` (a `MetadataColumnConstraint`).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.risingwave import RisingWave
from sqlglot.tokens import Token, TokenType

__all__ = ["Flink", "MetadataColumnConstraint"]


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """`METADATA [FROM 'key'] [VIRTUAL]`: `this` is the key's string literal (None: the column's name)."""

    arg_types = {"this": False, "virtual": False}


def _parse_metadata(parser: Any) -> MetadataColumnConstraint:
    key = parser._parse_string() if parser._match(TokenType.FROM) else None
    virtual = parser._match_text_seq("VIRTUAL")
    return parser.expression(MetadataColumnConstraint(this=key, virtual=bool(virtual)))


def _metadata_sql(generator: Any, expression: MetadataColumnConstraint) -> str:
    key = expression.this
    return (
        "METADATA"
        + (f" FROM {generator.sql(key)}" if key is not None else "")
        + (" VIRTUAL" if expression.args.get("virtual") else "")
    )


class Flink(RisingWave):
    # `arr[1]` keeps the index as written: Flink's arrays are 1-based and the planner reads the index so
    # (PostgreSQL's dialect would rewrite it to sqlglot's 0-based form, and a MAP's integer key with it)
    INDEX_OFFSET = 0

    class Tokenizer(RisingWave.Tokenizer):
        IDENTIFIERS = ["`"]
        QUOTES = ["'"]
        KEYWORDS = {
            **{k: v for k, v in RisingWave.Tokenizer.KEYWORDS.items() if k != "SESSION"},  # SESSION(...) is a TVF
            "STRING": TokenType.TEXT,
            "BYTES": TokenType.VARBINARY,
            "FLOAT": TokenType.FLOAT,  # Flink's FLOAT is 4 bytes (PostgreSQL's is DOUBLE)
        }

        def tokenize(self, sql: str) -> list[Token]:
            tokens = super().tokenize(sql)
            tables: set[int] = set()
            return _row_types(_partition_arguments(_drop_table_argument_keywords(tokens, tables), tables))

    class Parser(RisingWave.Parser):
        CONSTRAINT_PARSERS = {**RisingWave.Parser.CONSTRAINT_PARSERS, "METADATA": _parse_metadata}

    class Generator(RisingWave.Generator):  # type: ignore[valid-type,misc]
        TRANSFORMS = {**RisingWave.Generator.TRANSFORMS, MetadataColumnConstraint: _metadata_sql}


def _drop_table_argument_keywords(tokens: list[Token], tables: set[int]) -> list[Token]:
    """`f(TABLE t, ...)` → `f(t, ...)`: a TABLE keyword right after `(` or `,` and before a name (whose token's
    id goes into `tables`)."""
    out: list[Token] = []
    for i, token in enumerate(tokens):
        if (
            token.token_type is TokenType.TABLE
            and out
            and out[-1].token_type in (TokenType.L_PAREN, TokenType.COMMA)
            and i + 1 < len(tokens)
            and tokens[i + 1].token_type in (TokenType.VAR, TokenType.IDENTIFIER)
        ):
            tables.add(id(tokens[i + 1]))
            continue
        out.append(token)
    return out


def _row_types(tokens: list[Token]) -> list[Token]:
    """`ROW<a INT, b STRING>` is a type: its ROW keyword becomes sqlglot's STRUCT (`CURRENT ROW` stays)."""
    for token, following in zip(tokens, tokens[1:]):
        if token.token_type is TokenType.ROW and following.token_type is TokenType.LT:
            token.token_type = TokenType.STRUCT
    return tokens


def _partition_arguments(tokens: list[Token], tables: set[int]) -> list[Token]:
    """`f(t PARTITION BY k, ...)` or `f(t PARTITION BY (k1, k2), ...)` → `f(t, PARTITION_BY(k1, k2), ...)`, where
    `t` was a table argument (`TABLE t`); the keys keep their positions for errors."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not (token.token_type is TokenType.PARTITION_BY and out and id(out[-1]) in tables and i + 1 < len(tokens)):
            out.append(token)
            i += 1
            continue

        def at(kind: TokenType, text: str, token: Token = token) -> Token:
            return Token(kind, text, line=token.line, col=token.col, start=token.start, end=token.end)

        out.append(at(TokenType.COMMA, ","))
        out.append(at(TokenType.VAR, "PARTITION_BY"))
        i += 1
        if tokens[i].token_type is TokenType.L_PAREN:
            continue  # the parenthesised key list is the call's own
        out.append(at(TokenType.L_PAREN, "("))
        depth = 0
        while i < len(tokens):
            kind = tokens[i].token_type
            if depth == 0 and kind in (TokenType.COMMA, TokenType.R_PAREN):
                break
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(kind, 0)
            out.append(tokens[i])
            i += 1
        out.append(at(TokenType.R_PAREN, ")"))
    return out
