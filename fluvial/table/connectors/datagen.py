"""`'connector' = 'datagen'`: generated rows, Flink's options.

- `number-of-rows`: how many (bounded); without it the source is unbounded, unless a `sequence` field ends it;
- `rows-per-second` (default 10000): the rate per source subtask, kept by the source's reader (it hands out only
  the rows due by now, so a slow rate shows its rows as they are due, and checkpoints are never held up);
- `fields.<name>.kind`: `random` (default) or `sequence`; random numbers take `fields.<name>.min`/`.max`,
  random strings `fields.<name>.length` (default 100); sequences take `.start` and `.end`.

Rows are a pure function of their sequence number (random values are seeded by it), and the position is
the checkpointed offset of a NumberSequenceSource, so a restored job regenerates the same rows.
"""

from __future__ import annotations

import datetime as _dt
import random
import string
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from fluvial.common.key_groups import stable_hash
from fluvial.common.row import RowKind, _create_row
from fluvial.datastream.connectors.number_seq import NumberSequenceReader, NumberSequenceSource
from fluvial.datastream.functions import MapFunction
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.errors import ValidationException
from fluvial.table.types import DataType

_MAX_ROWS = 2**62


class _FieldSpec:
    def __init__(self, name: str, data_type: DataType, options: dict[str, str]) -> None:
        prefix = f"fields.{name}."
        self.name = name
        self.type = data_type
        self.kind = options.get(prefix + "kind", "random")
        if self.kind not in ("random", "sequence"):
            raise ValidationException(f"fields.{name}.kind must be 'random' or 'sequence', got '{self.kind}'")
        self.min = options.get(prefix + "min")
        self.max = options.get(prefix + "max")
        self.length = int(options.get(prefix + "length", "100"))
        self.start = int(options.get(prefix + "start", "0")) if self.kind == "sequence" else 0
        end = options.get(prefix + "end")
        if self.kind == "sequence":
            if prefix + "start" not in options or end is None:
                raise ValidationException(f"a sequence field needs fields.{name}.start and fields.{name}.end")
        self.end = int(end) if end is not None else None
        self.null_rate = float(options.get(prefix + "null-rate", "0"))

    def value(self, index: int, rng: random.Random) -> Any:
        if self.null_rate and rng.random() < self.null_rate:
            return None
        t = self.type.name
        if self.kind == "sequence":
            number = self.start + index
            return str(number) if self.type.is_string() else number
        if t in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
            bounds = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63}[t]
            lo = int(self.min) if self.min is not None else -bounds
            hi = int(self.max) if self.max is not None else bounds - 1
            return rng.randint(lo, hi)
        if t in ("FLOAT", "DOUBLE"):
            lo = float(self.min) if self.min is not None else -1e9
            hi = float(self.max) if self.max is not None else 1e9
            return rng.uniform(lo, hi)
        if t == "DECIMAL":
            scale = self.type.scale or 0
            return Decimal(rng.randint(0, 10 ** min(self.type.precision or 10, 18) - 1)).scaleb(-scale)
        if t == "BOOLEAN":
            return rng.random() < 0.5
        if self.type.is_string():
            return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(self.length))
        if t in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
        if t == "DATE":
            return _dt.date.today()
        raise ValidationException(f"datagen cannot generate {self.type} for field {self.name}")


class DataGenRow(MapFunction):
    """Sequence number → row."""

    def __init__(self, names: Sequence[str], fields: Sequence[_FieldSpec], seed: int) -> None:
        self.names = list(names)
        self.fields = list(fields)
        self.seed = seed

    def map(self, value: int) -> Any:
        rng = random.Random(self.seed * 1_000_003 + value)
        return _create_row(self.names, [f.value(value, rng) for f in self.fields], RowKind.INSERT)


@dataclass(frozen=True, slots=True)
class RateLimitedSequenceSource(NumberSequenceSource):
    """A NumberSequenceSource whose readers hand out at most `rows_per_second` numbers a second each."""

    rows_per_second: float = 10000.0

    def create_reader(self, task_info: Any) -> NumberSequenceReader:
        return RateLimitedSequenceReader(self.rows_per_second)


class RateLimitedSequenceReader(NumberSequenceReader):
    """Polls return the numbers due by now (none when none is due: the task does other work meanwhile)."""

    __slots__ = ("_rate", "_started", "_read")

    def __init__(self, rows_per_second: float) -> None:
        super().__init__()
        self._rate = rows_per_second
        self._started: float | None = None
        self._read = 0

    def poll(self, max_records: int) -> Sequence | None:
        now = time.monotonic()
        if self._started is None:
            self._started = now
        due = int((now - self._started) * self._rate) + 1 - self._read
        if due <= 0:
            return []
        records = super().poll(min(max_records, due))
        if records:
            self._read += len(records)
        return records


class DataGenFactory:
    """Generates only the columns a query uses (projection push-down: a random string column not read costs
    nothing; the random values of a projected row differ from the full row's, as random data may) and stops
    after a pushed LIMIT's rows (Flink's DataGenTableSource takes the limit too)."""

    def supports_nested_projection(self) -> bool:
        return False

    def supports_limit(self, context: ConnectorContext) -> bool:
        return True

    def create_source(self, env: Any, context: ConnectorContext) -> Any:
        options = context.options
        check_options(
            "datagen", options, {"number-of-rows", "rows-per-second", "scan.parallelism"}, prefixes=("fields.",)
        )
        for key in options:
            if key.startswith("fields.") and key.split(".")[1] not in context.names:
                raise ValidationException(
                    f"Unsupported options found for 'datagen': {key}; the table has no column {key.split('.')[1]}"
                )
        fields = [_FieldSpec(c.name, c.type, options) for c in context.columns]
        rows = int(options["number-of-rows"]) if "number-of-rows" in options else None
        for f in fields:
            if f.kind == "sequence" and f.end is not None:
                count = f.end - f.start + 1
                rows = count if rows is None else min(rows, count)
        if context.limit is not None:
            rows = context.limit if rows is None else min(rows, context.limit)
        fields = [fields[i] for i in context.produced_indices]
        total = rows if rows is not None else _MAX_ROWS
        rate = float(options.get("rows-per-second", "10000"))
        source = (
            RateLimitedSequenceSource(0, max(total - 1, 0), rows_per_second=rate)
            if rate > 0
            else NumberSequenceSource(0, max(total - 1, 0))
        )
        stream = env.from_source(source, source_name=context.table_name)
        if total == 0:
            stream = stream.filter(lambda _: False)
        if "scan.parallelism" in options:
            stream.set_parallelism(int(options["scan.parallelism"]))
        return stream.map(DataGenRow(context.produced_names, fields, seed=_stable_seed(context.table_name)))


def _stable_seed(table_name: str) -> int:
    """The table's seed, the same in every process: `hash()` of a str changes with each interpreter
    (PYTHONHASHSEED), so a job restored in a new process, or a TaskManager process, would generate other rows
    for the same sequence numbers than the checkpoint's position was counted in."""
    return stable_hash(table_name) & 0xFFFF
