"""`TableResult` (PyFlink's): what `execute_sql`, `execute` and `execute_insert` return.

`print()` writes Flink's tableau: a streaming query's rows with their change (`op`) column as they arrive,
then `N rows in set`; a DDL statement prints `OK`. Column widths follow Flink's PrintUtils for streaming
results: from the column's type (INT 11, BIGINT 20, BOOLEAN 5, TIMESTAMP(3) 23, DECIMAL(p, s) p + 2, ...),
at most 30, at least the name's length and `<NULL>`'s; a longer value is cut and ends in `...`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from enum import Enum
from typing import Any

from fluvial.common.row import Row
from fluvial.table.planner.logical import Column
from fluvial.table.types import DataType
from fluvial.table.values import sql_string

__all__ = ["TableResult", "ResultKind", "TableSchema", "column_width", "CloseableIterator"]

MAX_COLUMN_WIDTH = 30
NULL = "<NULL>"


class ResultKind(Enum):
    SUCCESS = 0
    SUCCESS_WITH_CONTENT = 1


class TableSchema:
    """The schema of a table or result (PyFlink's TableSchema / ResolvedSchema read methods)."""

    def __init__(self, columns: Sequence[Column]) -> None:
        self.columns = list(columns)

    def get_field_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def get_field_data_types(self) -> list[DataType]:
        return [c.type for c in self.columns]

    def get_field_count(self) -> int:
        return len(self.columns)

    def get_field_data_type(self, field: int | str) -> DataType | None:
        if isinstance(field, int):
            return self.columns[field].type
        for c in self.columns:
            if c.name == field:
                return c.type
        return None

    def get_column_names(self) -> list[str]:
        return self.get_field_names()

    def get_column_data_types(self) -> list[DataType]:
        return self.get_field_data_types()

    def __str__(self) -> str:
        return "(\n" + ",\n".join(f"  `{c.name}` {c.type}" for c in self.columns) + "\n)"


def column_width(column: Column) -> int:
    t = column.type
    widths = {"TINYINT": 4, "SMALLINT": 6, "INT": 11, "BIGINT": 20, "BOOLEAN": 5, "DATE": 10}
    if t.name in widths:
        width = widths[t.name]
    elif t.name == "DECIMAL":
        width = (t.precision or 10) + 2
    elif t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        width = 19 + ((t.precision or 0) + 1 if t.precision else 0)
    elif t.name == "TIME":
        width = 8 + ((t.precision or 0) + 1 if t.precision else 0)
    else:
        width = MAX_COLUMN_WIDTH
    return max(min(width, MAX_COLUMN_WIDTH), len(NULL), len(column.name))


def cell(value: Any, data_type: DataType) -> str:
    return NULL if value is None else sql_string(value, data_type)


class CloseableIterator:
    """The rows of a result, in arrival order; close() cancels a job still running."""

    def __init__(self, iterator: Any, names: list[str]) -> None:
        self._iterator = iterator
        self._names = names

    def __iter__(self) -> Iterator[Row]:
        return self

    def __next__(self) -> Row:
        value = next(self._iterator)
        row = Row(*value._values)
        row.set_row_kind(value._row_kind)
        return row

    def close(self) -> None:
        close = getattr(self._iterator, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class TableResult:
    """A statement's result: OK for DDL; rows for a query; a job for INSERT (`wait()` for it to end)."""

    def __init__(
        self,
        kind: ResultKind,
        columns: Sequence[Column],
        rows: Sequence[Row] | None = None,
        iterator_factory: Any = None,
        job_client: Any = None,
        streaming: bool = True,
        raw: bool = False,
    ) -> None:
        self._kind = kind
        self._raw = raw  # EXPLAIN's: print() writes the text as it is (Flink's PrintStyle.rawContent)
        self._columns = list(columns)
        self._rows = list(rows) if rows is not None else None
        self._iterator_factory = iterator_factory
        self._job_client = job_client
        self._streaming = streaming
        self._consumed = False

    def get_job_client(self) -> Any:
        return self._job_client

    def get_result_kind(self) -> ResultKind:
        return self._kind

    def get_table_schema(self) -> TableSchema:
        return TableSchema(self._columns)

    def get_resolved_schema(self) -> TableSchema:
        return TableSchema(self._columns)

    def wait(self, timeout_ms: int | None = None) -> None:
        if self._job_client is not None:
            future = self._job_client.get_job_execution_result()
            future.result(None if timeout_ms is None else timeout_ms / 1000)

    def collect(self) -> CloseableIterator:
        if self._rows is not None:
            return CloseableIterator(iter(_Wrapped(r) for r in self._rows), [c.name for c in self._columns])
        if self._consumed:
            raise RuntimeError(
                "the result of this TableResult was already collected or printed; run the query "
                "again to read its rows once more"
            )
        self._consumed = True
        return CloseableIterator(self._iterator_factory(), [c.name for c in self._columns])

    def print(self) -> None:
        out = sys.stdout
        if self._kind is ResultKind.SUCCESS:
            out.write("OK\n")
            out.flush()
            return
        if self._raw and self._rows is not None:
            for row in self._rows:
                out.write(f"{row[0]}\n")
            out.flush()
            return
        with self.collect() as rows:
            print_tableau(rows, self._columns, out, with_op=self._streaming and self._rows is None)


class _Wrapped:
    def __init__(self, row: Row) -> None:
        self._values = list(row)
        self._row_kind = row.get_row_kind()


def print_tableau(
    rows: Any, columns: Sequence[Column], out: Any, with_op: bool = True, max_width: int | None = MAX_COLUMN_WIDTH
) -> None:
    """Flink's tableau, streaming flavour: header, each row as it arrives, border, row count. Without the op
    column (a final result), the widths come from the data, at most `max_width` (None: whole values, as
    Flink's SQL client prints them)."""
    widths = [column_width(c) for c in columns]
    if not with_op:
        materialized = list(rows)
        widths = [max([len(c.name), *(len(cell(r[i], c.type)) for r in materialized)]) for i, c in enumerate(columns)]
        widths = [min(w, max_width or w) for w in widths]
        rows = materialized
    border = "+" + ("----+" if with_op else "") + "".join("-" * (w + 2) + "+" for w in widths)
    header = "|" + (" op |" if with_op else "") + "".join(f" {_fit(c.name, w)} |" for c, w in zip(columns, widths))
    out.write(border + "\n" + header + "\n" + border + "\n")
    count = 0
    for row in rows:
        count += 1
        kind = row.get_row_kind().short_string() if with_op else ""
        text = "".join(f" {_fit(cell(v, c.type), w)} |" for v, c, w in zip(row, columns, widths))
        out.write("|" + (f" {kind} |" if with_op else "") + text + "\n")
        out.flush()
    if count:
        out.write(border + "\n")
        out.write(f"{count} row{'s' if count != 1 else ''} in set\n")
    else:
        out.write(border + "\nEmpty set\n")
    out.flush()


def _fit(text: str, width: int) -> str:
    if len(text) > width:
        text = text[: width - 3] + "..."
    return text.rjust(width)
