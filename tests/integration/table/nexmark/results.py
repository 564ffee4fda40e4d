"""A query's final table (its changelog applied) as the recorder keeps it and the test compares it: the
sorted normalised rows, or, past 200 rows, their count, a SHA-256 of them, and the first 20 (so the
recorded file stays small and a difference still shows some rows)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

_ADD = {"+I": 1, "+U": 1, "-U": -1, "-D": -1}
_KEEP = 200


class FinalTable:
    """Accumulates change rows (`kind` as +I/-U/+U/-D, values normalised)."""

    def __init__(self) -> None:
        self.rows: Counter = Counter()

    def add(self, kind: str, values: list[Any]) -> None:
        self.rows[json.dumps(values)] += _ADD[kind]

    def summary(self) -> dict[str, Any]:
        keys = sorted((+self.rows).elements())
        rows = [json.loads(k) for k in keys]
        if len(rows) <= _KEEP:
            return {"count": len(rows), "rows": rows}
        digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()
        return {"count": len(rows), "sha256": digest, "first": rows[:20]}
