"""`Row` and `RowKind`, behaving as PyFlink's `pyflink.common.types` does.

A Row is positional (`Row(1, "a")`) or named (`Row(name="a", count=1)`, keyword order kept); a named row's
fields are reached by index, by name (`row["name"]`) or as attributes (`row.name`). A positional row of
strings doubles as a row *class*: `Person = Row("name", "age")`, then `Person("a", 1)` is
`Row(name='a', age=1)`.

Hazards, kept from PyFlink on purpose:
- a positional row has no `_fields` attribute at all (`hasattr(row, "_fields")` is how PyFlink code tells
  the two apart);
- rows are mutable (`row[0] = v`) yet hashable: never change a row that is a dict key or a key-by key;
- rows compare equal only when their values, their kind and their field names (or the lack of them) match.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from enum import Enum
from typing import Any

__all__ = ["Row", "RowKind"]


class RowKind(Enum):
    """The change a row stands for in a changelog; the value is the byte Flink writes for it."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def short_string(self) -> str:
        """Flink's two-character form, printed before a row: `+I`, `-U`, `+U`, `-D`."""
        return _SHORT_STRINGS[self]


_SHORT_STRINGS = {
    RowKind.INSERT: "+I",
    RowKind.UPDATE_BEFORE: "-U",
    RowKind.UPDATE_AFTER: "+U",
    RowKind.DELETE: "-D",
}


class _UnknownFieldError(KeyError, ValueError):
    """A field name the row does not have. A KeyError for Python code, a ValueError for code written
    against PyFlink (which raises ValueError there)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _create_row(fields: Sequence[str] | None, values: Sequence[Any], row_kind: RowKind | None = None) -> Row:
    """Rebuilds a row; the target of `Row.__reduce__`, so it must stay importable under this name. The SQL
    operators build every row they emit here, so its slots are set directly (no `__init__`); the names are
    copied (a Row class's field list is its `_values`, which item assignment changes in place)."""
    row = _new_row(Row)
    _set_values(row, list(values))
    if fields is not None:
        _set_fields(row, list(fields))
    _set_kind(row, RowKind.INSERT if row_kind is None else row_kind)
    return row


_new_row = object.__new__
_INTERNAL = frozenset({"_fields", "_values", "_row_kind", "_from_dict"})


class Row:
    """A row of values, optionally named, with a RowKind (INSERT unless set)."""

    __slots__ = ("_values", "_fields", "_row_kind", "_from_dict")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("Row takes either positional values or named values, not both: Row(1, 'a') or Row(a=1)")
        set_ = object.__setattr__
        if kwargs:
            set_(self, "_fields", list(kwargs))
            set_(self, "_values", list(kwargs.values()))
            set_(self, "_from_dict", True)
        else:
            set_(self, "_values", list(args))
        set_(self, "_row_kind", RowKind.INSERT)

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        """A row of the given kind: `Row.of_kind(RowKind.DELETE, 1, "a")`."""
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The named fields as a dict; with `recursive`, nested rows (also in lists and dicts) too."""
        if not hasattr(self, "_fields"):
            raise TypeError("Cannot convert a Row class into dict: the row has no field names (set_field_names)")
        if not recursive:
            return dict(zip(self._fields, self._values))
        return {name: _as_plain(value) for name, value in zip(self._fields, self._values)}

    def get_row_kind(self) -> RowKind:
        """The row's kind in a changelog: INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE."""
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        """Set the row's changelog kind.

        Args:
            row_kind: A RowKind.

        Raises:
            TypeError: `row_kind` is not a RowKind.
        """
        if not isinstance(row_kind, RowKind):
            raise TypeError(f"set_row_kind takes a RowKind such as RowKind.INSERT, got {row_kind!r}")
        object.__setattr__(self, "_row_kind", row_kind)

    def get_fields_by_names(self, names: Sequence[str]) -> list[Any]:
        """The values of the named fields, in the order of `names` (all values for a positional row or when
        `names` are the row's field names).

        Args:
            names: Field names of this row.

        Raises:
            KeyError: a name is not a field of this row.
        """
        if not hasattr(self, "_fields") or list(names) == self._fields:
            return list(self._values)
        unknown = [name for name in names if name not in self._fields]
        if unknown:
            raise KeyError(f"Field names {unknown} not exist in {self._fields}: use the row's own field names")
        return [self._values[self._fields.index(name)] for name in names]

    def set_field_names(self, field_names: Sequence[str]) -> None:
        """Name the row's fields, for access by name.

        Args:
            field_names: The names, in field order.
        """
        object.__setattr__(self, "_fields", list(field_names))

    def _is_retract_msg(self) -> bool:
        return self._row_kind in (RowKind.UPDATE_BEFORE, RowKind.DELETE)

    def _is_accumulate_msg(self) -> bool:
        return self._row_kind in (RowKind.UPDATE_AFTER, RowKind.INSERT)

    def __call__(self, *args: Any) -> Row:
        """Use this row's values as field names for a new row: `Row("name", "age")("a", 1)`."""
        if len(args) > len(self._values):
            raise ValueError(
                f"Can not create Row with fields {self!r}, expected {len(self._values)} values but got {args!r}"
            )
        return _create_row(self._values, args, self._row_kind)

    def _index_of(self, name: str) -> int:
        fields = getattr(self, "_fields", None)
        if fields is None:
            raise _UnknownFieldError(
                f"the row has no field names, so {name!r} cannot be looked up; use an index or set_field_names()"
            )
        try:
            return fields.index(name)
        except ValueError:
            raise _UnknownFieldError(f"the row has no field {name!r}; its fields are {fields}") from None

    def __getitem__(self, item: int | slice | str) -> Any:
        if not isinstance(item, str):
            return self._values[item]
        index = self._index_of(item)
        try:
            return self._values[index]
        except IndexError:
            raise _UnknownFieldError(f"the row has no value for field {item!r}") from None

    def __setitem__(self, key: int | slice | str, value: Any) -> None:
        if not isinstance(key, str):
            self._values[key] = value
            return
        index = self._index_of(key)
        if index >= len(self._values):
            raise _UnknownFieldError(f"the row has no value for field {key!r}")
        self._values[index] = value

    def __getattr__(self, item: str) -> Any:
        # Reached only when normal lookup fails: unset slots and field names.
        if item.startswith("_"):
            raise AttributeError(item)
        try:
            return self[item]
        except KeyError:
            raise AttributeError(item) from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in _INTERNAL:
            raise AttributeError(f"Row fields are not attributes to assign; use row[{key!r}] = value")
        object.__setattr__(self, key, value)

    def __contains__(self, item: Any) -> bool:
        """A named row contains its field names; a positional row (a row class) its values."""
        fields = getattr(self, "_fields", None)
        return item in (fields if fields is not None else self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __reduce__(self) -> tuple[Any, ...]:
        return _create_row, (getattr(self, "_fields", None), tuple(self._values), self._row_kind)

    def __repr__(self) -> str:
        fields = getattr(self, "_fields", None)
        if fields is not None:
            return "Row(" + ", ".join(f"{name}={value!r}" for name, value in zip(fields, self._values)) + ")"
        return "<Row(" + ", ".join(repr(value) for value in self._values) + ")>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row):
            return NotImplemented
        return (
            self._row_kind is other._row_kind
            and getattr(self, "_fields", None) == getattr(other, "_fields", None)
            and self._values == other._values
        )

    def __hash__(self) -> int:
        # The kind's int value, not the enum, so the hash of a row of ints is the same in every process.
        return hash((tuple(self._values), self._row_kind.value))


# the slots' own setters: what `_create_row` sets a new row's slots with (no __init__, no attribute lookup)
_set_values = Row.__dict__["_values"].__set__
_set_fields = Row.__dict__["_fields"].__set__
_set_kind = Row.__dict__["_row_kind"].__set__


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row):
        return value.as_dict(True)
    if isinstance(value, list):
        return [_as_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_plain(v) for k, v in value.items()}
    return value
