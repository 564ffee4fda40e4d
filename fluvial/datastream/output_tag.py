"""OutputTag names a side output (PyFlink `pyflink.datastream.OutputTag`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class OutputTag:
    """Names a side output, with its type (PyFlink's `OutputTag`): `ctx.output(tag, value)` emits to it,
    `stream.get_side_output(tag)` reads it.

    Example:
        ```python
        late = OutputTag("late", Types.STRING())
        ```
    """

    tag_id: str
    type_info: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.tag_id, str) or not self.tag_id:
            raise ValueError(f"an OutputTag needs a non-empty string id, got {self.tag_id!r}")
