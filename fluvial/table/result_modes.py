"""How the SQL client shows a query's result: Flink's three result modes (`sql-client.execution.result-mode`).

- `tableau`: the rows in a box as they arrive, each with its change (`op`: +I, -U, +U, -D), then `N rows in set`
  (`table_result.print_tableau`, also what `TableResult.print()` writes).
- `changelog`: every change as a line under a header, the `op` column first, no box (a changelog has no end
  to close a box at), flushed per row so a streaming query's changes show as they happen.
- `table`: a materialized view: the changelog applied (an update replaces its row, a delete removes it). On a
  terminal the view redraws in place as the query updates it (at most every `REFRESH_SECONDS`) and shows its
  latest state when the query ends or is cancelled; elsewhere (a pipe, a file, `-f` into a log) it is printed
  once, when the query ends, as Flink's batch results are.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Any, TextIO

from fluvial.common.row import Row
from fluvial.table.planner.logical import Column
from fluvial.table.table_result import MAX_COLUMN_WIDTH, _fit, cell, column_width, print_tableau

__all__ = ["ResultMode", "print_result", "CountingRows"]

REFRESH_SECONDS = 0.25
"""How often a live table view redraws at most (Flink's table view refreshes on an interval too)."""


class ResultMode(Enum):
    TABLEAU = "tableau"
    CHANGELOG = "changelog"
    TABLE = "table"

    @staticmethod
    def of(text: str) -> ResultMode:
        try:
            return ResultMode(text.strip().lower())
        except ValueError:
            modes = ", ".join(f"'{mode.value}'" for mode in ResultMode)
            raise ValueError(
                f"'{text}' is not a result mode of sql-client.execution.result-mode: use one of {modes}"
            ) from None


def print_result(rows: Iterable[Row], columns: Sequence[Column], out: TextIO, mode: ResultMode, changes: bool) -> int:
    """Print `rows` (a query's changelog when `changes`, else its final rows) in `mode`; the number of rows
    read. The caller closes the iterator (which cancels a job still running)."""
    if mode is ResultMode.TABLEAU or not changes:
        counter = CountingRows(rows)
        print_tableau(counter, columns, out, with_op=changes, max_width=None)
        return counter.count
    if mode is ResultMode.CHANGELOG:
        return _print_changelog(rows, columns, out)
    view = _MaterializedView()
    live = _is_terminal(out)
    drawn = 0
    last = 0.0
    try:
        for row in rows:
            view.apply(row)
            if live and time.monotonic() - last >= REFRESH_SECONDS:
                drawn = _redraw(out, drawn, view.rows, columns)
                last = time.monotonic()
    finally:
        if live and drawn:
            _redraw(out, drawn, view.rows, columns)
    if not drawn:  # not a terminal, or the query ended before the first redraw
        print_tableau(view.rows, columns, out, with_op=False, max_width=None)
    return view.changes


class CountingRows:
    """Rows passed through, counted (what `Query terminated, received a total of N rows` reports)."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self._rows = rows
        self.count = 0

    def __iter__(self) -> Any:
        for row in self._rows:
            self.count += 1
            yield row


def _print_changelog(rows: Iterable[Row], columns: Sequence[Column], out: TextIO) -> int:
    widths = [column_width(c) for c in columns]
    out.write(" op " + "".join(f" {_fit(c.name, w)}" for c, w in zip(columns, widths)) + "\n")
    out.flush()
    count = 0
    for row in rows:
        count += 1
        values = "".join(f" {_fit(cell(v, c.type), w)}" for v, c, w in zip(row, columns, widths))
        out.write(f" {row.get_row_kind().short_string()} {values}\n")
        out.flush()
    out.write(f"Received a total of {count} row{'s' if count != 1 else ''}\n")
    out.flush()
    return count


class _MaterializedView:
    """The changelog applied: +I and +U add a row, -U and -D remove one equal row (Flink's table view keeps a
    row per occurrence, so duplicates are kept and retracted one at a time)."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.changes = 0

    def apply(self, row: Row) -> None:
        self.changes += 1
        values = Row(*row)
        if row.get_row_kind().name in ("INSERT", "UPDATE_AFTER"):
            self.rows.append(values)
            return
        for index, kept in enumerate(self.rows):
            if list(kept) == list(values):
                del self.rows[index]
                return


def _is_terminal(out: TextIO) -> bool:
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


def _redraw(out: TextIO, drawn: int, rows: Sequence[Row], columns: Sequence[Column]) -> int:
    """Replace the `drawn` lines of the previous view with the current one, cut to the terminal's height (the
    rows that do not fit are counted below the box); returns the number of lines now drawn."""
    height = shutil.get_terminal_size((100, 24)).lines
    shown = list(rows[: max(height - 7, 1)])
    widths = [max([len(c.name), *(len(cell(r[i], c.type)) for r in shown)]) for i, c in enumerate(columns)]
    widths = [min(w, MAX_COLUMN_WIDTH) for w in widths]
    border = "+" + "".join("-" * (w + 2) + "+" for w in widths)
    lines = [border, "|" + "".join(f" {_fit(c.name, w)} |" for c, w in zip(columns, widths)), border]
    lines += ["|" + "".join(f" {_fit(cell(v, c.type), w)} |" for v, c, w in zip(r, columns, widths)) for r in shown]
    lines.append(border)
    hidden = len(rows) - len(shown)
    lines.append(f"{len(rows)} row{'s' if len(rows) != 1 else ''}" + (f" ({hidden} not shown)" if hidden else ""))
    if drawn:
        out.write(f"\x1b[{drawn}F\x1b[J")  # back to the view's first line, clear to the end of the screen
    out.write("\n".join(lines) + "\n")
    out.flush()
    return len(lines)
