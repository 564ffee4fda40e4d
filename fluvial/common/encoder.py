"""Encoders turn records into bytes for row-format file sinks (PyFlink `pyflink.common.Encoder`).

An encoder is picklable data: it travels in the job description to every sink writer. Writers encode a whole
buffer at once (`encode_batch`) and only fall back to per-record `encode` when they must cut a buffer
between two part files.
"""

from __future__ import annotations

import abc
import codecs
from dataclasses import dataclass, field, replace
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.print_format import format_for_print


class Encoder(abc.ABC):
    """Bytes for one record. Subclasses must be picklable (plain fields, no open handles)."""

    @abc.abstractmethod
    def encode(self, value: Any) -> bytes:
        """The bytes of one record, as they go into a part file.

        Args:
            value: The record.

        Returns:
            Its bytes.
        """

    def encode_batch(self, values: list) -> list[bytes]:
        """One bytes object per value, in order. Override when a whole batch can be encoded faster."""
        return [self.encode(v) for v in values]

    def for_input_type(self, type_info: Any) -> Encoder:
        """This encoder for records of `type_info` (the sink's input type); most encoders do not depend on it."""
        return self

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> SimpleStringEncoder:
        """`str(value)` followed by a newline, in the given charset (PyFlink's default row encoder)."""
        return SimpleStringEncoder(charset_name)


@dataclass(frozen=True, slots=True)
class SimpleStringEncoder(Encoder):
    """A record's text and a newline. As in PyFlink, whose Java encoder writes the `toString()` of the Java value
    a typed record becomes, a typed record is written as `print()` shows it (`(while,999)` for a
    `Types.TUPLE`, `+I[a, 1]` for a `Types.ROW`); an untyped one as `str(value)`."""

    charset_name: str = "UTF-8"
    type_info: Any = field(default=None, compare=False)  # the sink's input type, set by sink_to

    def __post_init__(self) -> None:
        try:
            codecs.lookup(self.charset_name)
        except LookupError:
            raise InvalidJobError(
                f"unknown charset {self.charset_name!r} for Encoder.simple_string_encoder; "
                f"use a Python codec name such as 'UTF-8' or 'ISO-8859-1'"
            ) from None

    def encode(self, value: Any) -> bytes:
        if self.type_info is not None:
            return f"{format_for_print(value, self.type_info)}\n".encode(self.charset_name)
        return f"{value}\n".encode(self.charset_name)

    def for_input_type(self, type_info: Any) -> SimpleStringEncoder:
        return replace(self, type_info=type_info)

    def encode_batch(self, values: list) -> list[bytes]:
        charset, type_info = self.charset_name, self.type_info
        if type_info is not None:
            return [f"{format_for_print(v, type_info)}\n".encode(charset) for v in values]
        return [f"{v}\n".encode(charset) for v in values]
