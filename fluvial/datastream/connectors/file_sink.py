"""`FileSink`: row formats (an Encoder per record) and bulk formats (a BulkWriter per part file, e.g. Parquet),
two-phase commit through hidden in-progress files (PyFlink's names; users import it from `file_system`).
Base paths are local paths or any fsspec URL (`file_systems`).

Sink contract details (beyond `sink.py`):
1. Records go to an in-progress file `.{part}.inprogress.{sink}-{uuid}` inside their bucket directory, where
   `{sink}` (16 hex digits) is the same for every attempt of this sink in this job and differs between sinks
   and jobs (derived from the job id, the sink operator's id and the base path).
2. A part is rolled (closed, kept hidden, remembered as a `PendingFile`) when the rolling policy says so:
   by size after a write, by age or inactivity when checked on write or flush.
3. `prepare_commit()` rolls every open part and returns all pending files since the last call: every
   checkpoint therefore closes its parts, so no in-progress file ever has to be resumed after a restore.
4. `FileSink.commit` renames each pending file to its final name `{prefix}-{subtask}-{counter}{suffix}`; a
   pending file already renamed is skipped, so commit is idempotent.
5. A bulk part file is finished (its writer writes footers) when it rolls; a bulk format rolls on every
   checkpoint, as in Flink, and additionally by size or time when its rolling policy says so.
6. A restored writer deletes the hidden files of the attempts that failed after its checkpoint, as Flink's
   FileSink cleans up on restore: its state holds its part prefix and next counter, and every hidden part of
   that prefix and subtask numbered at or above the counter was opened after the checkpoint — never committed
   by it, and not to be committed by any later one the job restores from. A writer restored from one state of
   its own subtask keeps that prefix, so each attempt of a subtask names its parts in one sequence; the hidden
   parts the checkpoint recorded (numbered below the counter) stay for the restored commit.
7. A writer that starts without any state (the job's first attempt, or a restart before the job's first
   completed checkpoint: it runs from the start, so nothing an earlier attempt wrote will ever be committed)
   removes the hidden parts of its own subtask that carry its sink's `{sink}` mark: those of earlier attempts of
   this sink in this job. Committed parts (visible) and hidden parts of other sinks or jobs are never touched.

"""

from __future__ import annotations

import abc
import bisect
import dataclasses
import functools
import hashlib
import itertools
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fluvial.common.encoder import Encoder
from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.common.serialization import BulkWriter, BulkWriterFactory
from fluvial.common.task_info import TaskInfo
from fluvial.common.time import MIN_WATERMARK, Duration, current_millis, to_millis
from fluvial.datastream.connectors import file_systems as fsys
from fluvial.datastream.connectors.sink import Sink, SinkWriter

# ---------------------------------------------------------------------------------------------- sink config


@dataclass(frozen=True, slots=True)
class OutputFileConfig:
    """Part file names: `{prefix}-{subtask}-{counter}{suffix}`.

    Without a prefix, each writer uses `part-<uuid4>` chosen when it is created, so names never clash across
    runs or restarts; with a fixed prefix, names are deterministic and a writer skips names already taken.
    """

    part_prefix: str | None = None
    part_suffix: str = ""

    def __post_init__(self) -> None:
        for what, value in (("prefix", self.part_prefix), ("suffix", self.part_suffix)):
            if value is not None and ("/" in value or os.sep in value):
                raise InvalidJobError(f"part {what} {value!r} contains a path separator; use a plain name")
        if self.part_prefix == "":
            raise InvalidJobError("part prefix is empty; give a name such as 'part' or leave it unset")

    def get_part_prefix(self) -> str:
        """The part files' name prefix."""
        return "part" if self.part_prefix is None else self.part_prefix

    def get_part_suffix(self) -> str:
        """The part files' name suffix."""
        return self.part_suffix

    @staticmethod
    def builder() -> OutputFileConfigBuilder:
        """A builder of part-file names (`with_part_prefix`, `with_part_suffix`)."""
        return OutputFileConfigBuilder()


class OutputFileConfigBuilder:
    def __init__(self) -> None:
        self._prefix: str | None = None
        self._suffix = ""

    def with_part_prefix(self, prefix: str) -> OutputFileConfigBuilder:
        self._prefix = prefix
        return self

    def with_part_suffix(self, suffix: str) -> OutputFileConfigBuilder:
        self._suffix = suffix
        return self

    def build(self) -> OutputFileConfig:
        return OutputFileConfig(self._prefix, self._suffix)


OutputFileConfig.OutputFileConfigBuilder = OutputFileConfigBuilder  # type: ignore[attr-defined]


@dataclass(slots=True)
class PartFileInfo:
    """What a rolling policy may look at: the open part's size and times (ms)."""

    size: int
    created_at: int
    last_write_at: int


@dataclass(frozen=True, slots=True)
class RollingPolicy:
    """When to close a part file besides at every checkpoint (None: never for that reason)."""

    part_size: int | None = None
    rollover_interval: int | None = None
    inactivity_interval: int | None = None

    def __post_init__(self) -> None:
        for name in ("part_size", "rollover_interval", "inactivity_interval"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InvalidJobError(f"rolling policy {name} must be positive, got {value}")

    @staticmethod
    def default_rolling_policy(
        part_size: int = 128 * 1024 * 1024,
        rollover_interval: Duration | int = 60_000,
        inactivity_interval: Duration | int = 60_000,
    ) -> RollingPolicy:
        """Roll when a part reaches `part_size` bytes, is `rollover_interval` ms old, or idle that long."""
        return RollingPolicy(part_size, to_millis(rollover_interval), to_millis(inactivity_interval))

    @staticmethod
    def on_checkpoint_rolling_policy() -> RollingPolicy:
        """Roll only at checkpoints (and end of input)."""
        return RollingPolicy()

    def should_roll_on_event(self, part: PartFileInfo) -> bool:
        """Whether to close the part file before writing the next record.

        Args:
            part: The open part file's size and times.

        Returns:
            True to roll.
        """
        return self.part_size is not None and part.size >= self.part_size

    def should_roll_on_processing_time(self, part: PartFileInfo, now: int) -> bool:
        """Whether to close the part file now (asked periodically).

        Args:
            part: The open part file's size and times.
            now: The processing time (ms).

        Returns:
            True to roll.
        """
        return (self.rollover_interval is not None and now - part.created_at >= self.rollover_interval) or (
            self.inactivity_interval is not None and now - part.last_write_at >= self.inactivity_interval
        )


@dataclass(frozen=True, slots=True)
class BucketAssignerContext:
    current_processing_time: int
    current_watermark: int = MIN_WATERMARK
    timestamp: int | None = None


class BucketAssigner(abc.ABC):
    """Picks the bucket (subdirectory of the base path, "" for the base path itself) of each record."""

    bucket_per_batch: ClassVar[bool] = False
    """True when the bucket ignores the element, so the writer asks once per buffer instead of per record."""

    @abc.abstractmethod
    def get_bucket_id(self, element: Any, context: BucketAssignerContext) -> str:
        """The bucket (subdirectory) of a record.

        Args:
            element: The record.
            context: Its timestamp and the current time.

        Returns:
            The bucket id.
        """

    @staticmethod
    def base_path_bucket_assigner() -> BasePathBucketAssigner:
        """Write every record into the base path itself (one bucket)."""
        return BasePathBucketAssigner()

    @staticmethod
    def date_time_bucket_assigner(
        format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None
    ) -> DateTimeBucketAssigner:
        """One bucket (subdirectory) per period of processing time.

        Args:
            format_str: Java's date format of the bucket names (`yyyy-MM-dd--HH`: hourly).
            timezone_id: An IANA time zone; default: the machine's local time zone, as in Flink.

        Returns:
            The assigner.
        """
        return DateTimeBucketAssigner(format_str, timezone_id)


@dataclass(frozen=True, slots=True)
class BasePathBucketAssigner(BucketAssigner):
    bucket_per_batch: ClassVar[bool] = True

    def get_bucket_id(self, element: Any, context: BucketAssignerContext) -> str:
        return ""


_PATTERN_TOKENS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}


@functools.lru_cache(maxsize=32)
def _strftime_pattern(pattern: str) -> str:
    """Java date pattern (Flink's notation) to strftime; quoted text is literal."""
    out = []
    for m in re.finditer(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+", pattern):
        if m.group(1) is not None:
            out.append(m.group(1).replace("%", "%%"))
        elif m.group(2) is not None:
            token = _PATTERN_TOKENS.get(m.group(0))
            if token is None:
                raise InvalidJobError(
                    f"date pattern {pattern!r}: {m.group(0)!r} is not supported; use yyyy, yy, MM, dd, HH, mm, ss "
                    f"and quoted literals"
                )
            out.append(token)
        else:
            out.append(m.group(0).replace("%", "%%"))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class DateTimeBucketAssigner(BucketAssigner):
    """Buckets by the writer's processing time, e.g. `2024-05-01--13` (local time unless a zone is given)."""

    format_str: str = "yyyy-MM-dd--HH"
    timezone_id: str | None = None
    bucket_per_batch: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _strftime_pattern(self.format_str)
        if self.timezone_id is not None:
            try:
                ZoneInfo(self.timezone_id)
            except (ZoneInfoNotFoundError, ValueError):
                raise InvalidJobError(
                    f"unknown time zone {self.timezone_id!r}; use an IANA name such as 'UTC' or 'Europe/Berlin'"
                ) from None

    def get_bucket_id(self, element: Any, context: BucketAssignerContext) -> str:
        zone = None if self.timezone_id is None else ZoneInfo(self.timezone_id)
        moment = datetime.fromtimestamp(context.current_processing_time / 1000, zone)
        return moment.strftime(_strftime_pattern(self.format_str))


# ---------------------------------------------------------------------------------------------- sink


@dataclass(frozen=True, slots=True)
class PendingFile:
    """A closed, hidden part file and the visible name it gets at commit (the committable)."""

    in_progress_path: str
    final_path: str


@dataclass(frozen=True, slots=True)
class FileSinkWriterState:
    """The next part counter of a subtask and its part prefix; a restored writer continues above every restored
    counter, and removes the hidden parts numbered at or above it (contract 6)."""

    subtask_index: int
    part_counter: int
    part_prefix: str | None = None  # None: a state from before the prefix was kept (nothing is cleaned)


@dataclass(frozen=True, slots=True)
class FileSink(Sink):
    """Writes rows to part files under `base_path`; picklable data, writers are built at run time."""

    base_path: str
    encoder: Encoder | None
    bucket_assigner: BucketAssigner = field(default_factory=DateTimeBucketAssigner)
    rolling_policy: RollingPolicy = field(default_factory=RollingPolicy.default_rolling_policy)
    output_file_config: OutputFileConfig = field(default_factory=OutputFileConfig)
    bucket_check_interval: int = 60_000
    bulk_writer_factory: BulkWriterFactory | None = None

    @staticmethod
    def for_row_format(base_path: str | os.PathLike, encoder: Encoder) -> RowFormatBuilder:
        """A FileSink writing each record with an Encoder (a line per record, for instance).

        Args:
            base_path: The output directory: a local path or an fsspec URL.
            encoder: How a record becomes bytes (`Encoder.simple_string_encoder()`).

        Returns:
            The builder.

        Example:
            ```python
            FileSink.for_row_format("/data/out", Encoder.simple_string_encoder()).build()
            ```
        """
        if not isinstance(encoder, Encoder):
            raise InvalidJobError(
                f"for_row_format takes an Encoder (e.g. Encoder.simple_string_encoder()), got {encoder!r}"
            )
        return RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str | os.PathLike, writer_factory: BulkWriterFactory) -> BulkFormatBuilder:
        """Part files written whole by a BulkWriter (Parquet, ORC, Avro, CSV); they roll on every checkpoint."""
        if not isinstance(writer_factory, BulkWriterFactory):
            raise InvalidJobError(
                f"for_bulk_format takes a BulkWriterFactory (e.g. ParquetBulkWriters.for_row_type(...)), got "
                f"{writer_factory!r}"
            )
        return BulkFormatBuilder(base_path, writer_factory)

    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> FileSinkWriter:
        """The writer of one sink subtask, restored from its checkpointed state.

        Args:
            task_info: The subtask.
            restored_state: Its pending and in-progress parts, or None.

        Returns:
            The writer.
        """
        return FileSinkWriter(self, task_info, restored_state)

    def commit(self, committables: list[Any]) -> None:
        """Rename every pending file to its final name; one already renamed is skipped (idempotent)."""
        for pending in committables:
            try:
                fsys.commit_file(pending.in_progress_path, pending.final_path)
            except FileNotFoundError:
                if fsys.exists(pending.final_path):
                    continue  # committed before a restore; the contract allows committing twice
                raise ResourceError(
                    f"cannot commit part file {pending.final_path!r}: its pending file {pending.in_progress_path!r} "
                    f"is gone; hidden in-progress files under the sink's base path must not be deleted while a "
                    f"job may still commit them"
                ) from None

    def with_input_type(self, type_info: Any) -> FileSink:
        """This sink for records of `type_info`: its encoder writes them as PyFlink's does (sink_to calls it)."""
        if self.encoder is None:
            return self
        return dataclasses.replace(self, encoder=self.encoder.for_input_type(type_info))

    def default_name(self) -> str:
        """The sink's name when none is given."""
        return "File Sink"

    def locations(self) -> tuple[str, ...]:
        """The output path (checked at submission)."""
        return (self.base_path,)


class RowFormatBuilder:
    """`FileSink.for_row_format(path, encoder).with_...(...).build()`."""

    def __init__(
        self,
        base_path: str | os.PathLike,
        encoder: Encoder | None,
        bulk_writer_factory: BulkWriterFactory | None = None,
    ) -> None:
        self._base_path = fsys.resolve_path(base_path)
        self._encoder = encoder
        self._bulk = bulk_writer_factory
        self._assigner: BucketAssigner = DateTimeBucketAssigner()
        self._policy = (
            RollingPolicy.default_rolling_policy()
            if bulk_writer_factory is None
            else RollingPolicy.on_checkpoint_rolling_policy()
        )
        suffix = "" if bulk_writer_factory is None else bulk_writer_factory.file_suffix()
        self._config = OutputFileConfig(part_suffix=suffix)
        self._check_interval = 60_000

    def enable_compact(self, strategy: Any, compactor: Any) -> RowFormatBuilder:
        from fluvial.datastream.connectors.file_options import refuse_compaction

        refuse_compaction()
        return self

    def disable_compact(self) -> RowFormatBuilder:
        return self

    def with_bucket_check_interval(self, interval: Duration | int) -> RowFormatBuilder:
        self._check_interval = to_millis(interval)
        return self

    def with_bucket_assigner(self, assigner: BucketAssigner) -> RowFormatBuilder:
        self._assigner = assigner
        return self

    def with_rolling_policy(self, policy: RollingPolicy) -> RowFormatBuilder:
        self._policy = policy
        return self

    def with_output_file_config(self, config: OutputFileConfig) -> RowFormatBuilder:
        self._config = config
        return self

    def build(self) -> FileSink:
        return FileSink(
            self._base_path,
            self._encoder,
            self._assigner,
            self._policy,
            self._config,
            self._check_interval,
            self._bulk,
        )


class BulkFormatBuilder(RowFormatBuilder):
    """`FileSink.for_bulk_format(path, factory)...build()`: rolls on every checkpoint (and end of input)."""

    def __init__(self, base_path: str | os.PathLike, writer_factory: BulkWriterFactory) -> None:
        super().__init__(base_path, None, writer_factory)


FileSink.RowFormatBuilder = RowFormatBuilder  # type: ignore[attr-defined]
FileSink.BulkFormatBuilder = BulkFormatBuilder  # type: ignore[attr-defined]


class StreamingFileSink:
    """Flink 1.x's name of the file sink (`add_sink(StreamingFileSink.for_row_format(...).build())`): the same
    FileSink, with the same exactly-once commits."""

    for_row_format = staticmethod(FileSink.for_row_format)
    for_bulk_format = staticmethod(FileSink.for_bulk_format)


@dataclass(slots=True)
class _OpenPart:
    file: BinaryIO
    pending: PendingFile
    info: PartFileInfo
    bulk: BulkWriter | None = None


class FileSinkWriter(SinkWriter):
    """One subtask's writer: an open part per bucket, plus parts rolled since the last `prepare_commit`."""

    def __init__(
        self,
        sink: FileSink,
        task_info: TaskInfo,
        restored_state: list[Any] | None = None,
        clock: Callable[[], int] = current_millis,
    ) -> None:
        self._sink = sink
        self._policy = sink.rolling_policy
        self._subtask = task_info.subtask_index
        config = sink.output_file_config
        restored = list(restored_state or ())
        own = [s for s in restored if s.subtask_index == self._subtask and getattr(s, "part_prefix", None)]
        if config.part_prefix is not None:
            self._prefix = config.part_prefix
        elif len(restored) == 1 and len(own) == 1:
            self._prefix = own[0].part_prefix  # the attempts of this subtask name parts in one sequence
        else:
            self._prefix = f"part-{uuid.uuid4()}"
        self._suffix = config.part_suffix
        self._counter = max((s.part_counter for s in restored), default=0)
        self._clock = clock
        self._open: dict[str, _OpenPart] = {}
        self._rolled: list[PendingFile] = []
        self._last_sweep = clock()
        self._mark = _sink_mark(task_info, sink.base_path)
        _make_dir(sink.base_path)
        if restored_state is None:
            self._remove_parts_of_earlier_attempts()
        self._remove_parts_of_failed_attempts(restored)

    def _remove_parts_of_earlier_attempts(self) -> None:
        """Contract 7: without state, the hidden parts of this subtask of this sink in this job (any counter)."""
        if not self._mark:
            return
        pattern = re.compile(
            rf"^\..+-{self._subtask}-\d+{re.escape(self._suffix)}\.inprogress\."
            rf"{self._mark}-[0-9a-f-]+$"
        )
        for path in fsys.find_named(self._sink.base_path, lambda name: pattern.match(name) is not None):
            fsys.remove_file(path)

    def _remove_parts_of_failed_attempts(self, restored: list[FileSinkWriterState]) -> None:
        """Contract 6: the hidden parts each restored state's subtask opened after its checkpoint."""
        for state in restored:
            prefix = getattr(state, "part_prefix", None)
            if prefix is None:
                continue
            pattern = re.compile(
                rf"^\.{re.escape(prefix)}-{state.subtask_index}-(\d+)"
                rf"{re.escape(self._suffix)}\.inprogress\.[0-9a-f-]+$"
            )

            def after_checkpoint(name: str, pattern: re.Pattern = pattern, counter: int = state.part_counter) -> bool:
                match = pattern.match(name)
                return match is not None and int(match.group(1)) >= counter

            for path in fsys.find_named(self._sink.base_path, after_checkpoint):
                fsys.remove_file(path)

    def write_batch(self, values: list) -> None:
        if not values:
            return
        now = self._clock()
        self._sweep(now)
        assigner = self._sink.bucket_assigner
        context = BucketAssignerContext(now)
        if assigner.bucket_per_batch:
            self._write_bucket(assigner.get_bucket_id(None, context), values, now)
            return
        groups: dict[str, list] = {}
        for value in values:
            groups.setdefault(assigner.get_bucket_id(value, context), []).append(value)
        for bucket, group in groups.items():
            self._write_bucket(bucket, group, now)

    def _write_bucket(self, bucket: str, values: list, now: int) -> None:
        """Write in as few calls as possible, cutting the buffer exactly where a part reaches its size."""
        part = self._open.get(bucket)
        if part is not None and self._policy.should_roll_on_processing_time(part.info, now):
            self._roll(bucket)
        if self._sink.bulk_writer_factory is not None:
            self._write_bulk(bucket, values, now)
            return
        encoded = self._sink.encoder.encode_batch(values)
        part_size = self._policy.part_size
        if part_size is None:
            self._write(bucket, b"".join(encoded), now)
            return
        ends = list(itertools.accumulate(map(len, encoded)))  # ends[j]: bytes of records 0..j
        start = 0
        while start < len(encoded):
            part = self._open.get(bucket) or self._open_part(bucket, now)
            before = ends[start - 1] if start else 0
            # the first record after which this part holds at least part_size bytes closes it
            last = bisect.bisect_left(ends, before + part_size - part.info.size, lo=start)
            self._write(bucket, b"".join(encoded[start : last + 1]), now)
            if last >= len(encoded):
                return
            self._roll(bucket)
            start = last + 1

    def _write_bulk(self, bucket: str, values: list, now: int) -> None:
        """The bulk writer takes the whole buffer; the part's size is what reached the file so far."""
        part = self._open.get(bucket) or self._open_part(bucket, now)
        part.bulk.add_elements(values)
        part.info.size = part.file.tell()
        part.info.last_write_at = now
        if self._policy.should_roll_on_event(part.info):
            self._roll(bucket)

    def _write(self, bucket: str, data: bytes, now: int) -> None:
        part = self._open.get(bucket) or self._open_part(bucket, now)
        part.file.write(data)
        part.info.size += len(data)
        part.info.last_write_at = now

    def _open_part(self, bucket: str, now: int) -> _OpenPart:
        directory = fsys.join(self._sink.base_path, bucket)
        _make_dir(directory)
        while True:
            name = f"{self._prefix}-{self._subtask}-{self._counter}{self._suffix}"
            self._counter += 1
            final_path = fsys.join(directory, name)
            if not fsys.exists(final_path):  # a fixed prefix may meet files of an earlier run
                break
        marked = f"{self._mark}-{uuid.uuid4()}" if self._mark else str(uuid.uuid4())
        in_progress = fsys.join(directory, f".{name}.inprogress.{marked}")
        file = fsys.open_for_new_file(in_progress)
        factory = self._sink.bulk_writer_factory
        bulk = None if factory is None else factory.create(file)
        part = _OpenPart(file, PendingFile(in_progress, final_path), PartFileInfo(0, now, now), bulk)
        self._open[bucket] = part
        return part

    def _roll(self, bucket: str) -> None:
        part = self._open.pop(bucket)
        if part.bulk is not None:
            part.bulk.finish()
        part.file.close()
        self._rolled.append(part.pending)

    def _sweep(self, now: int) -> None:
        """Roll parts that are too old or idle, at most once per bucket check interval."""
        if now - self._last_sweep < self._sink.bucket_check_interval:
            return
        self._last_sweep = now
        for bucket in [b for b, p in self._open.items() if self._policy.should_roll_on_processing_time(p.info, now)]:
            self._roll(bucket)

    def flush(self, end_of_input: bool) -> None:
        for part in self._open.values():
            if part.bulk is not None:
                part.bulk.flush()
            part.file.flush()
        if not end_of_input:
            self._sweep(self._clock())

    def prepare_commit(self) -> list[Any]:
        """Close every open part; return it and every part rolled since the last call (then forget them)."""
        for bucket in list(self._open):
            self._roll(bucket)
        committables, self._rolled = self._rolled, []
        return committables

    def snapshot_state(self) -> list[Any]:
        return [FileSinkWriterState(self._subtask, self._counter, self._prefix)]

    def close(self) -> None:
        """Close handles; hidden files stay (a restored job may still commit what a checkpoint recorded)."""
        for part in self._open.values():
            part.file.close()
        self._open.clear()


def _sink_mark(task_info: TaskInfo, base_path: str) -> str:
    """Contract 7's mark of a sink's hidden parts: the same for every attempt of this sink in this job; empty
    (nothing is cleaned without state) when the writer is built outside a job's sink operator."""
    if not task_info.operator_id:
        return ""
    identity = f"{task_info.job_id}/{task_info.operator_id}/{base_path}"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def _make_dir(path: str) -> None:
    try:
        fsys.make_dirs(path)
    except OSError as error:
        raise ResourceError(
            f"file sink cannot create directory {path!r} ({error.strerror or error}); choose a base path that "
            f"is a directory this process can write to"
        ) from None
