"""The SQL client's result modes on a changelog: tableau with the op column, changelog lines, and the table mode's
materialized view — printed once into a pipe, redrawn in place on a terminal."""

from __future__ import annotations

import io

from fluvial.common.row import Row, RowKind
from fluvial.table.planner.logical import Column
from fluvial.table.result_modes import ResultMode, print_result
from fluvial.table.types import DataTypes

COLUMNS = [Column("word", DataTypes.STRING()), Column("c", DataTypes.BIGINT())]


def changes() -> list[Row]:
    rows = []
    for kind, values in (
        (RowKind.INSERT, ("a", 1)),
        (RowKind.INSERT, ("b", 1)),
        (RowKind.UPDATE_BEFORE, ("a", 1)),
        (RowKind.UPDATE_AFTER, ("a", 2)),
        (RowKind.DELETE, ("b", 1)),
    ):
        row = Row(*values)
        row.set_row_kind(kind)
        rows.append(row)
    return rows


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_tableau_prints_each_change_with_its_op_in_a_box():
    out = io.StringIO()
    assert print_result(iter(changes()), COLUMNS, out, ResultMode.TABLEAU, changes=True) == 5
    text = out.getvalue()
    assert "| op |" in text and "| -U |" in text and "| +U |" in text and "| -D |" in text
    assert text.endswith("5 rows in set\n")


def test_changelog_prints_a_line_per_change_under_a_header_with_op():
    out = io.StringIO()
    print_result(iter(changes()), COLUMNS, out, ResultMode.CHANGELOG, changes=True)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["op", "word", "c"]
    assert [line.split() for line in lines[1:6]] == [
        ["+I", "a", "1"],
        ["+I", "b", "1"],
        ["-U", "a", "1"],
        ["+U", "a", "2"],
        ["-D", "b", "1"],
    ]
    assert lines[6] == "Received a total of 5 rows"


def test_table_mode_prints_the_materialized_view_once_into_a_pipe():
    out = io.StringIO()
    print_result(iter(changes()), COLUMNS, out, ResultMode.TABLE, changes=True)
    assert out.getvalue() == "+------+---+\n| word | c |\n+------+---+\n|    a | 2 |\n+------+---+\n1 row in set\n"


def test_table_mode_redraws_the_view_in_place_on_a_terminal(monkeypatch):
    monkeypatch.setattr("fluvial.table.result_modes.REFRESH_SECONDS", 0.0)
    out = Terminal()
    print_result(iter(changes()), COLUMNS, out, ResultMode.TABLE, changes=True)
    text = out.getvalue()
    assert text.count("\x1b[J") == 5  # each change redrawn over the last view, then the final one
    final = text.rsplit("\x1b[J", 1)[1]
    assert final == "+------+---+\n| word | c |\n+------+---+\n|    a | 2 |\n+------+---+\n1 row\n"
