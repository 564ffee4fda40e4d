"""Every file format through real jobs: bulk writers of the FileSink (rolled on checkpoints, committed
exactly once) and readers of the FileSource, read back with the format's own library where fluvial has no
reader (ORC); in both execution modes."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest

from fluvial.common import Row, Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, FileSource
from fluvial.datastream.formats.avro import AvroBulkWriters, AvroInputFormat, AvroSchema
from fluvial.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from fluvial.datastream.formats.orc import OrcBulkWriters
from fluvial.datastream.formats.parquet import (
    AvroParquetReaders,
    AvroParquetWriters,
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from fluvial.testing import ExecutionMode, environment

ROW = Types.ROW_NAMED(
    ["id", "name", "price", "tags"], [Types.INT(), Types.STRING(), Types.DOUBLE(), Types.LIST(Types.STRING())]
)
RECORDS = [(i, f"item-{i}", i * 1.5, [f"t{i % 3}"]) for i in range(500)]
AVRO = AvroSchema.parse_string("""{"type": "record", "name": "Item", "fields": [
    {"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}""")


def env_of(mode: ExecutionMode, parallelism: int = 2, checkpoint_ms: int | None = 20) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    if checkpoint_ms:
        env.enable_checkpointing(checkpoint_ms)
    return env


def write(mode: ExecutionMode, out, factory, records=RECORDS, type_info=ROW) -> list[str]:
    env = env_of(mode)
    sink = (
        FileSink.for_bulk_format(str(out), factory)
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    env.from_collection(records, type_info=type_info).map(lambda r: r, output_type=type_info).sink_to(sink)
    env.execute()
    names = sorted(os.listdir(out))
    assert names and not [n for n in names if n.startswith(".")]  # everything committed, nothing in progress
    return [str(out / n) for n in names]


def read(mode: ExecutionMode, source) -> list:
    env = env_of(mode, checkpoint_ms=None)
    return list(env.from_source(source).execute_and_collect())


@pytest.mark.timeout(90)
def test_parquet_rows_written_on_checkpoints_read_back_exactly_once(tmp_path, mode):
    files = write(mode, tmp_path / "out", ParquetBulkWriters.for_row_type(ROW))
    assert all(f.endswith(".parquet") for f in files)
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(ROW, batch_size=64), str(tmp_path / "out")
    ).build()
    rows = read(mode, source)
    assert sorted(tuple(r) for r in rows) == sorted(RECORDS)
    assert all(isinstance(r, Row) and r.name.startswith("item-") for r in rows)


@pytest.mark.timeout(90)
def test_orc_rows_written_and_read_back_with_pyarrow(tmp_path, mode):
    import pyarrow.orc as orc

    files = write(mode, tmp_path / "out", OrcBulkWriters.for_row_type(ROW))
    got = [tuple(r.values()) for f in files for r in orc.read_table(f).to_pylist()]
    assert sorted(got) == sorted(RECORDS)


@pytest.mark.timeout(90)
def test_avro_container_files_written_and_read_with_create_input(tmp_path, mode):
    records = [(i, f"n{i}") for i in range(300)]
    row_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    write(mode, tmp_path / "out", AvroBulkWriters.for_generic_record(AVRO), records, row_type)
    env = env_of(mode, checkpoint_ms=None)
    ds = env.create_input(AvroInputFormat(str(tmp_path / "out"), AVRO))
    assert sorted((r["id"], r["name"]) for r in ds.execute_and_collect()) == records


@pytest.mark.timeout(90)
def test_avro_records_in_parquet(tmp_path, mode):
    records = [{"id": i, "name": f"n{i}"} for i in range(50)]
    write(mode, tmp_path / "out", AvroParquetWriters.for_generic_record(AVRO), records, None)
    source = FileSource.for_record_stream_format(
        AvroParquetReaders.for_generic_record(AVRO), str(tmp_path / "out")
    ).build()
    assert sorted(read(mode, source), key=lambda r: r["id"]) == records


@pytest.mark.timeout(90)
def test_csv_written_with_header_and_read_back_typed(tmp_path, mode):
    schema = (
        CsvSchema.builder()
        .add_number_column("id", Types.INT())
        .add_string_column("name")
        .add_number_column("price", Types.BIG_DEC())
        .add_array_column("tags", separator="|")
        .set_use_header()
        .build()
    )
    records = [(i, f"x,{i}", Decimal(i) / 4, ["a", "b"]) for i in range(200)]
    write(mode, tmp_path / "out", CsvBulkWriters.for_schema(schema), records, schema.get_type_info())
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), str(tmp_path / "out")).build()
    rows = read(mode, source)
    assert sorted(tuple(r) for r in rows) == sorted(records)


def test_csv_reader_resumes_at_the_checkpointed_record(tmp_path):
    from fluvial.common.task_info import TaskInfo

    path = tmp_path / "in.csv"
    path.write_text('1,"a\nb"\n2,c\n3,d\n')
    schema = CsvSchema.builder().add_number_column("n", Types.INT()).add_string_column("s").build()
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), str(path)).build()
    reader = source.create_reader(TaskInfo("job", "src", 0, 1, 128))
    reader.add_splits(source.create_splits(1))
    assert [tuple(r) for r in reader.poll(2)] == [(1, "a\nb"), (2, "c")]
    state = reader.snapshot_state()
    reader.close()
    restored = source.create_reader(TaskInfo("job", "src", 0, 1, 128))
    restored.add_splits(state)
    assert [tuple(r) for r in restored.poll(10)] == [(3, "d")]
    assert restored.poll(10) is None
