"""Encoders turn records into bytes for row-format file sinks (PyFlink `pyflink.common.Encoder`).

An encoder is picklable data: it travels in the job description to every sink writer. Writers encode a whole
buffer at once (`encode_batch`) and only fall back to per-record `encode` when they must cut a buffer
between two part files.
"""

from __future__ import annotations

import abc
import codecs
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError


class Encoder(abc.ABC):
    """Bytes for one record. Subclasses must be picklable (plain fields, no open handles)."""

    @abc.abstractmethod
    def encode(self, value: Any) -> bytes: ...

    def encode_batch(self, values: list) -> list[bytes]:
        """One bytes object per value, in order. Override when a whole batch can be encoded faster."""
        return [self.encode(v) for v in values]

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> SimpleStringEncoder:
        """`str(value)` followed by a newline, in the given charset (PyFlink's default row encoder)."""
        return SimpleStringEncoder(charset_name)


@dataclass(frozen=True, slots=True)
class SimpleStringEncoder(Encoder):
    charset_name: str = "UTF-8"

    def __post_init__(self) -> None:
        try:
            codecs.lookup(self.charset_name)
        except LookupError:
            raise InvalidJobError(
                f"unknown charset {self.charset_name!r} for Encoder.simple_string_encoder; "
                f"use a Python codec name such as 'UTF-8' or 'ISO-8859-1'"
            ) from None

    def encode(self, value: Any) -> bytes:
        return f"{value}\n".encode(self.charset_name)

    def encode_batch(self, values: list) -> list[bytes]:
        charset = self.charset_name
        return [f"{v}\n".encode(charset) for v in values]
