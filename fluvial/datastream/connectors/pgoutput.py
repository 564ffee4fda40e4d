"""Decoding PostgreSQL's `pgoutput` logical replication messages (protocol version 1), the binary format the
CDC source reads from its replication slot: Begin, Commit, Relation, Insert, Update, Delete, Truncate (Origin,
Type and Message are skipped). Column values arrive as text; `Relation.casters` turn them into the Python values
psycopg2 gives for the same column in a query, so snapshot rows and change rows are alike.

Reference: PostgreSQL's "Logical Replication Message Formats" (protocol chapter).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_INT16 = struct.Struct("!h").unpack_from
_INT32 = struct.Struct("!i").unpack_from
_BEGIN = struct.Struct("!qqI").unpack_from  # final LSN, commit time, xid
_COMMIT = struct.Struct("!bqqq").unpack_from  # flags, commit LSN, end LSN, commit time
_RELATION_HEAD = struct.Struct("!I").unpack_from

UNCHANGED = object()
"""A TOASTed value an update did not change, which pgoutput does not send again."""


class DecodeError(ValueError):
    """A message this decoder cannot read (not pgoutput protocol 1)."""


@dataclass
class Relation:
    """A table as pgoutput describes it; `key` marks the replica identity's columns."""

    oid: int
    schema: str
    name: str
    replica_identity: str  # 'd' default, 'n' nothing, 'f' full, 'i' index
    columns: list[str]
    type_oids: list[int]
    key: list[bool]
    casters: list[Callable[[str], Any]] = field(default_factory=list)
    key_indexes: list[int] = field(default_factory=list)  # the primary key's columns (set by the reader)

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    commit_lsn: int
    end_lsn: int


@dataclass(frozen=True, slots=True)
class Change:
    """An insert ('I'), update ('U') or delete ('D') of `relation_oid`; `old` is the old row (replica identity
    FULL) or its key columns (others None), None when not sent; values are text, None or UNCHANGED."""

    kind: str
    relation_oid: int
    old: list | None
    new: list | None
    old_is_key_only: bool = False


@dataclass(frozen=True, slots=True)
class Truncate:
    relation_oids: tuple[int, ...]


def _cstring(data: bytes, offset: int) -> tuple[str, int]:
    end = data.index(0, offset)
    return data[offset:end].decode(), end + 1


def _tuple(data: bytes, offset: int) -> tuple[list, int]:
    (count,) = _INT16(data, offset)
    offset += 2
    values: list = []
    append = values.append
    for _ in range(count):
        kind = data[offset]
        offset += 1
        if kind == 116:  # 't': text
            (length,) = _INT32(data, offset)
            offset += 4
            append(data[offset : offset + length].decode())
            offset += length
        elif kind == 110:  # 'n': null
            append(None)
        elif kind == 117:  # 'u': unchanged TOAST
            append(UNCHANGED)
        elif kind == 98:  # 'b': binary (only with the binary option, which the source does not ask for)
            raise DecodeError("pgoutput sent a binary column value; the source asks for text values")
        else:
            raise DecodeError(f"unknown tuple column kind {kind!r}")
    return values, offset


def insert_values(data: bytes, casters: list) -> list:
    """The new row of an Insert message ('I', relation oid, 'N', tuple), each text value through its caster (None:
    kept as text): the hot path of change capture, fused so an insert costs one pass and no objects but the list.
    A caster's error propagates (the caller names table, column and position)."""
    (count,) = _INT16(data, 6)
    offset = 8
    values: list = []
    append = values.append
    for i in range(count):
        kind = data[offset]
        if kind == 116:  # 't'
            (length,) = _INT32(data, offset + 1)
            start = offset + 5
            offset = start + length
            caster = casters[i]
            text = data[start:offset].decode()
            append(text if caster is None else caster(text, None))
        elif kind == 110:  # 'n'
            offset += 1
            append(None)
        else:
            raise DecodeError(f"unexpected column kind {kind!r} in an insert")
    return values


def decode(data: bytes) -> Any:
    """One message: a Begin, Commit, Relation, Change or Truncate, or None for the kinds the source ignores."""
    tag = data[0]
    if tag == 73:  # 'I'
        (oid,) = _RELATION_HEAD(data, 1)
        new, _ = _tuple(data, 6)  # 5: 'N'
        return Change("I", oid, None, new)
    if tag == 85:  # 'U'
        (oid,) = _RELATION_HEAD(data, 1)
        marker, offset, old, key_only = data[5], 6, None, False
        if marker in (75, 79):  # 'K' key / 'O' old row
            old, offset = _tuple(data, offset)
            key_only = marker == 75
            offset += 1  # 'N'
        new, _ = _tuple(data, offset)
        return Change("U", oid, old, new, key_only)
    if tag == 68:  # 'D'
        (oid,) = _RELATION_HEAD(data, 1)
        old, _ = _tuple(data, 6)
        return Change("D", oid, old, None, data[5] == 75)
    if tag == 66:  # 'B'
        final_lsn, _, xid = _BEGIN(data, 1)
        return Begin(final_lsn, xid)
    if tag == 67:  # 'C'
        _, commit_lsn, end_lsn, _ = _COMMIT(data, 1)
        return Commit(commit_lsn, end_lsn)
    if tag == 82:  # 'R'
        return _relation(data)
    if tag == 84:  # 'T'
        (count,) = _INT32(data, 1)
        return Truncate(tuple(_RELATION_HEAD(data, 6 + 4 * i)[0] for i in range(count)))
    if tag in (79, 89, 77):  # 'O' origin, 'Y' type, 'M' message
        return None
    raise DecodeError(f"unknown pgoutput message {chr(tag)!r}")


def _relation(data: bytes) -> Relation:
    (oid,) = _RELATION_HEAD(data, 1)
    schema, offset = _cstring(data, 5)
    name, offset = _cstring(data, offset)
    identity = chr(data[offset])
    (count,) = _INT16(data, offset + 1)
    offset += 3
    columns, types, key = [], [], []
    for _ in range(count):
        flags = data[offset]
        column, offset = _cstring(data, offset + 1)
        type_oid, _modifier = struct.unpack_from("!Ii", data, offset)
        offset += 8
        columns.append(column)
        types.append(type_oid)
        key.append(bool(flags & 1))
    return Relation(oid, schema or "pg_catalog", name, identity, columns, types, key)


def format_lsn(lsn: int) -> str:
    """PostgreSQL's notation: `16/B374D848`."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)
