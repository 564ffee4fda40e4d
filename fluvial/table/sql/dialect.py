"""Flink's SQL dialect for sqlglot.

sqlglot has no Flink dialect; RisingWave's (a streaming Postgres) parses Flink's DDL — `WATERMARK FOR ts AS
...`, `WITH ('k' = 'v')`, `PRIMARY KEY (..) NOT ENFORCED`, computed columns — so this dialect starts there
and adds what Flink has that it lacks:
- backquoted identifiers (`` `user` ``), as Flink's parser quotes them;
- window table functions: `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))` — the `TABLE`
  keyword before a table argument is dropped by the tokenizer, so the call parses as a function of the
  table's name, which the planner reads as a table;
- `STRING` and `BYTES` types (parsed as TEXT and VARBINARY, mapped back by `fluvial.table.sql.types`);
- `ROW<name type, ...>` types (read as sqlglot's STRUCT: a ROW keyword right before `<`).
"""

from __future__ import annotations

from sqlglot.dialects.risingwave import RisingWave
from sqlglot.tokens import Token, TokenType

__all__ = ["Flink"]


class Flink(RisingWave):
    class Tokenizer(RisingWave.Tokenizer):
        IDENTIFIERS = ["`"]
        QUOTES = ["'"]
        KEYWORDS = {
            **RisingWave.Tokenizer.KEYWORDS,
            "STRING": TokenType.TEXT,
            "BYTES": TokenType.VARBINARY,
        }

        def tokenize(self, sql: str) -> list[Token]:
            tokens = super().tokenize(sql)
            return _row_types(_drop_table_argument_keywords(tokens))

    class Parser(RisingWave.Parser):
        pass


def _drop_table_argument_keywords(tokens: list[Token]) -> list[Token]:
    """`f(TABLE t, ...)` → `f(t, ...)`: a TABLE keyword right after `(` or `,` and before a name."""
    out: list[Token] = []
    for i, token in enumerate(tokens):
        if (
            token.token_type is TokenType.TABLE
            and out
            and out[-1].token_type in (TokenType.L_PAREN, TokenType.COMMA)
            and i + 1 < len(tokens)
            and tokens[i + 1].token_type in (TokenType.VAR, TokenType.IDENTIFIER)
        ):
            continue
        out.append(token)
    return out


def _row_types(tokens: list[Token]) -> list[Token]:
    """`ROW<a INT, b STRING>` is a type: its ROW keyword becomes sqlglot's STRUCT (`CURRENT ROW` stays)."""
    for token, following in zip(tokens, tokens[1:]):
        if token.token_type is TokenType.ROW and following.token_type is TokenType.LT:
            token.token_type = TokenType.STRUCT
    return tokens
