"""`ChangelogMode` (PyFlink's `pyflink.table.ChangelogMode`): which row kinds a stream carries."""

from __future__ import annotations

from fluvial.common.row import RowKind


class ChangelogMode:
    def __init__(self, kinds: frozenset[RowKind]) -> None:
        self.kinds = kinds

    @staticmethod
    def insert_only() -> ChangelogMode:
        return ChangelogMode(frozenset({RowKind.INSERT}))

    @staticmethod
    def upsert() -> ChangelogMode:
        return ChangelogMode(frozenset({RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE}))

    @staticmethod
    def all() -> ChangelogMode:
        return ChangelogMode(frozenset(RowKind))
