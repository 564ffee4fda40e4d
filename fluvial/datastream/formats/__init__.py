"""File and message formats (PyFlink `pyflink.datastream.formats`): csv and json on the standard library,
avro on fastavro (`fluvial[avro]`), parquet and orc on pyarrow (`fluvial[parquet]`, `fluvial[orc]`).

Readers are FileSource formats (`FileSource.for_record_stream_format` / `for_bulk_file_format`), writers are
bulk formats of the FileSink (`FileSink.for_bulk_format`, rolled on every checkpoint), and the row schemas
are (de)serialization schemas of single messages. Where PyFlink takes the Table API's `DataTypes`/`RowType`
(CSV column types, Parquet and ORC row types), fluvial, which has no Table API, takes the equivalent
`Types` (`Types.ROW_NAMED([...], [...])`, `Types.INT()`, ...).
"""
