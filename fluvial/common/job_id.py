"""JobID (PyFlink `pyflink.common.JobID`): a job's 32-hex-digit identifier, as Flink prints it."""

from __future__ import annotations

import os


class JobID:
    """Statistically unique; `str()` gives the 32 hex digits Flink's logs, REST API and CLI use."""

    __slots__ = ("_hex",)

    def __init__(self, hex_string: str) -> None:
        value = str(hex_string).lower()
        if len(value) != 32 or any(c not in "0123456789abcdef" for c in value):
            raise ValueError(f"a JobID is 32 hex digits, got {hex_string!r}")
        self._hex = value

    @staticmethod
    def generate() -> JobID:
        """A new random JobID (16 random bytes)."""
        return JobID(os.urandom(16).hex())

    @staticmethod
    def from_hex_string(hex_string: str) -> JobID:
        """The JobID written as 32 hex digits.

        Args:
            hex_string: The hex digits.

        Returns:
            The JobID.
        """
        return JobID(hex_string)

    def to_hex_string(self) -> str:
        """The JobID as 32 hex digits, as Flink prints it."""
        return self._hex

    def __str__(self) -> str:
        return self._hex

    def __repr__(self) -> str:
        return f"JobID({self._hex})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobID) and other._hex == self._hex

    def __hash__(self) -> int:
        return hash(self._hex)
