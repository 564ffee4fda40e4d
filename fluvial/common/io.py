"""InputFormat (PyFlink `pyflink.common.io`): a description of bounded input read with
`env.create_input(input_format)`, e.g. `AvroInputFormat(path, schema)`.

An InputFormat is picklable data. `create_source()` builds the Source (`fluvial.datastream.connectors`) that
reads it, so an input format gets splits, checkpointed positions and parallel reading from the source it
builds. (Only the API layer calls it, which keeps `fluvial.common` free of imports from the layers above.)
"""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["InputFormat"]


class InputFormat(abc.ABC):
    """A legacy input format (PyFlink's `InputFormat`), read with `env.create_input(format)`."""

    @abc.abstractmethod
    def create_source(self) -> Any:
        """The bounded Source reading this format's input."""

    def get_produced_type(self) -> Any:
        """The TypeInformation of the records read (None: any Python value)."""
        return None

    def name(self) -> str:
        """The format's name, the source operator's name."""
        return type(self).__name__
