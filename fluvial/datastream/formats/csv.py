"""CSV (PyFlink `pyflink.datastream.formats.csv`) on the standard library's `csv` module.

- `CsvSchema` describes the columns (`CsvSchema.builder().add_string_column("name").add_number_column("n",
  Types.INT())...build()`) and the dialect (separator, quote, escape, null value, header).
- `CsvReaderFormat.for_schema(schema)`: a FileSource format producing Rows named by the columns.
- `CsvBulkWriters.for_schema(schema)`: a FileSink bulk format writing Rows, tuples or dicts.
- `CsvRowSerializationSchema` / `CsvRowDeserializationSchema`: one row per message.

Values are read by their column's type (numbers, booleans `true`/`false`, decimals, arrays split by the array
element separator); the null value (empty by default) reads as None. A value that cannot be read fails the
job naming the column, unless the deserialization schema ignores parse errors.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any, BinaryIO

from fluvial.common.errors import InvalidJobError
from fluvial.common.row import _create_row
from fluvial.common.serialization import BulkWriter, BulkWriterFactory, DeserializationSchema, SerializationSchema
from fluvial.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    ListTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TypeInformation,
    Types,
)
from fluvial.datastream.connectors.file_source import BulkFormat
from fluvial.datastream.formats.row_files import RecordFileReader, row_type_of, row_values

__all__ = [
    "CsvBulkWriters",
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]

_ARRAYS = (ListTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo, PrimitiveArrayTypeInfo)


# --- values ---------------------------------------------------------------------------------------------------


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"expected true or false, got {text!r}")
    return lowered == "true"


def _parse_decimal(text: str) -> Decimal:
    try:
        return Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"not a decimal: {text!r}") from None


_SCALAR_PARSERS: dict[BasicType, Callable[[str], Any]] = {
    BasicType.STRING: str,
    BasicType.CHAR: str,
    BasicType.BOOLEAN: _parse_bool,
    BasicType.BYTE: int,
    BasicType.SHORT: int,
    BasicType.INT: int,
    BasicType.LONG: int,
    BasicType.BIG_INT: int,
    BasicType.FLOAT: float,
    BasicType.DOUBLE: float,
    BasicType.BIG_DEC: _parse_decimal,
}


def _scalar_parser(type_info: TypeInformation, column: str) -> Callable[[str], Any]:
    if isinstance(type_info, BasicTypeInfo) and type_info.basic_type in _SCALAR_PARSERS:
        return _SCALAR_PARSERS[type_info.basic_type]
    raise InvalidJobError(
        f"CSV column {column!r} has type {type_info!r}; CSV columns hold strings, numbers, booleans, decimals "
        "or arrays of those"
    )


def _format_value(value: Any, separator: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return separator.join(_format_value(v, separator) for v in value)
    return str(value)


# --- schema ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    type_info: TypeInformation
    array_separator: str | None = None  # set for array columns


@dataclass(frozen=True)
class CsvSchema:
    """Columns and dialect. Defaults follow Flink's (Jackson's): `,` separator, `"` quote, no escape, `\\n`
    lines, empty null value, no header."""

    columns: tuple[_Column, ...] = ()
    column_separator: str = ","
    quote_char: str | None = '"'
    escape_char: str | None = None
    line_separator: str = "\n"
    null_value: str = ""
    array_element_separator: str = ";"
    allow_comments: bool = False
    skip_first_data_row: bool = False
    use_header: bool = False
    strict_headers: bool = False
    any_property_name: str | None = None

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        """A builder of a CSV schema.

        Returns:
            The CsvSchemaBuilder.

        Example:
            ```python
            schema = CsvSchema.builder().add_string_column("name").add_number_column("age", Types.INT()).build()
            ```
        """
        return CsvSchemaBuilder()

    def get_type_info(self) -> RowTypeInfo:
        """The Row type of the records the schema reads and writes."""
        return Types.ROW_NAMED([c.name for c in self.columns], [c.type_info for c in self.columns])

    def size(self) -> int:
        """The number of columns."""
        return len(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def __str__(self) -> str:
        return "CsvSchema(" + ", ".join(f"{c.name}: {c.type_info!r}" for c in self.columns) + ")"

    # -- reading and writing rows (shared by the file formats and the row schemas) ---------------------------

    def _dialect(self) -> dict[str, Any]:
        return {
            "delimiter": self.column_separator,
            "quotechar": self.quote_char or '"',
            "quoting": csv.QUOTE_MINIMAL if self.quote_char else csv.QUOTE_NONE,
            "escapechar": self.escape_char,
            "lineterminator": self.line_separator,
            "doublequote": self.escape_char is None,
        }

    def _parsers(self) -> list[Callable[[str], Any]]:
        parsers = []
        for column in self.columns:
            if isinstance(column.type_info, _ARRAYS):
                element = _scalar_parser(column.type_info.element_type, column.name)
                separator = column.array_separator or self.array_element_separator
                parsers.append(lambda text, e=element, s=separator: [e(part) for part in text.split(s)] if text else [])
            else:
                parsers.append(_scalar_parser(column.type_info, column.name))
        return parsers

    def parse_fields(self, fields: list[str], parsers: list[Callable[[str], Any]]) -> Any:
        """A Row from a row's text fields.

        Args:
            fields: The fields as read.
            parsers: One parser per column.

        Returns:
            The Row.

        Raises:
            ValueError: a field does not parse as its column's type.
        """
        names = [c.name for c in self.columns]
        if len(fields) != len(names):
            raise InvalidJobError(f"CSV line {fields!r} has {len(fields)} columns, the schema {len(names)} ({names})")
        values = []
        for text, parse, name in zip(fields, parsers, names):
            if text == self.null_value:
                values.append(None)
                continue
            try:
                values.append(parse(text))
            except ValueError as error:
                raise InvalidJobError(f"CSV column {name!r}: cannot read {text!r} ({error})") from None
        return _create_row(names, values)

    def records(self, text: Iterator[str]) -> Iterator[Any]:
        """Rows from lines of text (header and comments handled)."""
        parsers = self._parsers()
        lines: Iterator[str] = text
        if self.allow_comments:
            lines = (line for line in lines if not line.lstrip().startswith("#"))
        reader = csv.reader(lines, **self._dialect())
        if self.use_header or self.skip_first_data_row:
            header = next(reader, None)
            if self.strict_headers and header is not None and header != [c.name for c in self.columns]:
                raise InvalidJobError(
                    f"CSV header {header} does not match the schema's columns {[c.name for c in self.columns]}"
                )
        for fields in reader:
            if fields:
                yield self.parse_fields(fields, parsers)

    def write_rows(self, records: list, out: io.StringIO) -> None:
        """Write records as CSV rows.

        Args:
            records: Rows (or tuples) of the schema.
            out: Where the text goes.
        """
        names = [c.name for c in self.columns]
        separators = [c.array_separator or self.array_element_separator for c in self.columns]
        writer = csv.writer(out, **self._dialect())
        null = self.null_value
        writer.writerows(
            [
                null if v is None else _format_value(v, sep)
                for v, sep in zip(row_values(record, names, "CSV"), separators)
            ]
            for record in records
        )

    def header(self) -> list[str]:
        """The column names, in order."""
        return [c.name for c in self.columns]


class CsvSchemaBuilder:
    """Builds a CsvSchema column by column, with Jackson's CSV options (PyFlink's `CsvSchemaBuilder`):
    `CsvSchema.builder()`.
    """

    def __init__(self) -> None:
        self._schema = CsvSchema()

    def _set(self, **changes: Any) -> CsvSchemaBuilder:
        self._schema = replace(self._schema, **changes)
        return self

    def _add(self, column: _Column) -> CsvSchemaBuilder:
        if any(c.name == column.name for c in self._schema.columns):
            raise InvalidJobError(f"CSV schema has two columns named {column.name!r}")
        return self._set(columns=self._schema.columns + (column,))

    def add_array_column(self, name: str, separator: str = ";", element_type: TypeInformation | None = None):
        """Append an array column, its elements split by `separator`; returns this builder.

        Args:
            name: The column's name.
            separator: What separates the elements.
            element_type: The elements' type; default string.
        """
        element = element_type or Types.STRING()
        _scalar_parser(element, name)
        return self._add(_Column(name, Types.OBJECT_ARRAY(element), separator))

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        """Append a boolean column.

        Args:
            name: The column's name.

        Returns:
            This builder.
        """
        return self._add(_Column(name, Types.BOOLEAN()))

    def add_number_column(self, name: str, number_type: TypeInformation | None = None) -> CsvSchemaBuilder:
        """Append a number column.

        Args:
            name: The column's name.
            number_type: Its type (`Types.INT()`, `Types.DOUBLE()`, ...); default a 64-bit integer.

        Returns:
            This builder.
        """
        number = number_type or Types.LONG()
        if not (
            isinstance(number, BasicTypeInfo)
            and number.basic_type
            in (
                BasicType.BYTE,
                BasicType.SHORT,
                BasicType.INT,
                BasicType.LONG,
                BasicType.BIG_INT,
                BasicType.FLOAT,
                BasicType.DOUBLE,
                BasicType.BIG_DEC,
            )
        ):
            raise InvalidJobError(f"add_number_column takes a numeric type (e.g. Types.INT()), got {number!r}")
        return self._add(_Column(name, number))

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        """Append a string column.

        Args:
            name: The column's name.

        Returns:
            This builder.
        """
        return self._add(_Column(name, Types.STRING()))

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        """Append every column of another schema.

        Args:
            schema: The schema.

        Returns:
            This builder.
        """
        for column in schema.columns:
            self._add(column)
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        """Remove every column added so far.

        Returns:
            This builder.
        """
        return self._set(columns=())

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        """Set whether lines starting with `#` are skipped.

        Args:
            allow: True to skip them.

        Returns:
            This builder.
        """
        return self._set(allow_comments=bool(allow))

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        """Set the name of the column collecting extra fields.

        Args:
            name: The column's name.

        Returns:
            This builder.
        """
        from fluvial.common.errors import NotYetSupportedError

        raise NotYetSupportedError("CSV 'any property' columns are not supported yet; declare every column")

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        """Turn off splitting array columns.

        Returns:
            This builder.
        """
        return self._set(array_element_separator="")

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        """Set no separator for the array column at `index`.

        Args:
            index: The column's index.

        Returns:
            This builder.
        """
        columns = list(self._schema.columns)
        columns[index] = replace(columns[index], array_separator=None)
        return self._set(columns=tuple(columns))

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        """Set the separator of array columns' elements (default `;`).

        Args:
            separator: The separator.

        Returns:
            This builder.
        """
        return self._set(array_element_separator=separator)

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        """Set the character between columns (default `,`).

        Args:
            char: The character.

        Returns:
            This builder.
        """
        if not isinstance(char, str) or len(char) != 1:
            raise InvalidJobError(f"the column separator is one character, got {char!r}")
        return self._set(column_separator=char)

    def disable_escape_char(self) -> CsvSchemaBuilder:
        """Turn off escaping.

        Returns:
            This builder.
        """
        return self._set(escape_char=None)

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        """Set the escape character (none by default).

        Args:
            char: The character.

        Returns:
            This builder.
        """
        return self._set(escape_char=char)

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        """Set what ends a row when writing (default `\n`).

        Args:
            separator: The line separator.

        Returns:
            This builder.
        """
        return self._set(line_separator=separator)

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        """Set the text that reads and writes as None.

        Args:
            null_value: The text.

        Returns:
            This builder.
        """
        return self._set(null_value=null_value)

    def disable_quote_char(self) -> CsvSchemaBuilder:
        """Turn off quoting.

        Returns:
            This builder.
        """
        return self._set(quote_char=None)

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        """Set the quoting character (default `"`).

        Args:
            char: The character.

        Returns:
            This builder.
        """
        return self._set(quote_char=char)

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        """Set whether the first row is skipped (a header).

        Args:
            skip: True to skip it.

        Returns:
            This builder.
        """
        return self._set(skip_first_data_row=bool(skip))

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        """Set whether the header must match the schema's columns exactly.

        Args:
            strict: True to check.

        Returns:
            This builder.
        """
        return self._set(strict_headers=bool(strict))

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        """Set whether the first row names the columns.

        Args:
            use: True when it does.

        Returns:
            This builder.
        """
        return self._set(use_header=bool(use))

    def size(self) -> int:
        """The number of columns so far."""
        return len(self._schema.columns)

    def __len__(self) -> int:
        return len(self._schema.columns)

    def build(self) -> CsvSchema:
        """The CsvSchema."""
        if not self._schema.columns:
            raise InvalidJobError("a CSV schema needs at least one column (add_string_column, add_number_column...)")
        return self._schema


# --- files ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CsvReaderFormat(BulkFormat):
    """Rows of CSV files; a reader's offset counts the rows it returned."""

    schema: CsvSchema
    charset: str = "utf-8"

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        """A FileSource format reading CSV files as Rows of `schema`.

        Args:
            schema: The CsvSchema.

        Returns:
            The format.

        Example:
            ```python
            FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), "/data/people.csv").build()
            ```
        """
        if not isinstance(schema, CsvSchema):
            raise InvalidJobError(f"CsvReaderFormat.for_schema takes a CsvSchema, got {schema!r}")
        schema._parsers()  # every column readable, checked now
        return CsvReaderFormat(schema)

    def open_reader(self, path: str, offset: int) -> RecordFileReader:
        """A reader of one CSV file from a byte offset.

        Args:
            path: The file.
            offset: Where to start.

        Returns:
            The reader.
        """
        schema, charset = self.schema, self.charset
        return RecordFileReader(
            path, offset, lambda binary: schema.records(io.TextIOWrapper(binary, encoding=charset, newline=""))
        )


class _CsvWriter(BulkWriter):
    def __init__(self, schema: CsvSchema, stream: BinaryIO) -> None:
        self._schema = schema
        self._stream = stream
        if schema.use_header:
            self.add_elements([schema.header()])

    def add_element(self, element: Any) -> None:
        self.add_elements([element])

    def add_elements(self, elements: list) -> None:
        out = io.StringIO()
        self._schema.write_rows(elements, out)
        self._stream.write(out.getvalue().encode("utf-8"))

    def finish(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class _CsvWriterFactory(BulkWriterFactory):
    schema: CsvSchema

    def create(self, stream: BinaryIO) -> BulkWriter:
        return _CsvWriter(self.schema, stream)

    def file_suffix(self) -> str:
        return ".csv"


class CsvBulkWriters:
    """FileSink bulk writers of CSV files (PyFlink's `CsvBulkWriters`)."""

    @staticmethod
    def for_schema(schema: CsvSchema) -> BulkWriterFactory:
        """A FileSink bulk-writer factory writing Rows of `schema` as CSV.

        Args:
            schema: The CsvSchema.

        Returns:
            The factory, for `FileSink.for_bulk_format`.
        """
        if not isinstance(schema, CsvSchema):
            raise InvalidJobError(f"CsvBulkWriters.for_schema takes a CsvSchema, got {schema!r}")
        return _CsvWriterFactory(schema)


# --- messages -------------------------------------------------------------------------------------------------


def _schema_for(type_info: Any, what: str) -> CsvSchema:
    row_type = row_type_of(type_info, what)
    columns = []
    for name, field_type in zip(row_type.get_field_names(), row_type.get_field_types()):
        column = _Column(name, field_type)
        _scalar_parser(field_type.element_type, name) if isinstance(field_type, _ARRAYS) else _scalar_parser(
            field_type, name
        )
        columns.append(column)
    return CsvSchema(tuple(columns))


@dataclass(frozen=True)
class CsvRowDeserializationSchema(DeserializationSchema):
    """One CSV line per message into a Row of `type_info` (`CsvRowDeserializationSchema.Builder(type_info)`)."""

    schema: CsvSchema
    ignore_parse_errors: bool = False
    type_info: Any = field(default=None)

    def deserialize(self, message: bytes) -> Any:
        """One CSV line as a Row.

        Args:
            message: The bytes.

        Returns:
            The Row.
        """
        text = bytes(message).decode("utf-8").rstrip("\r\n")
        try:
            rows = list(self.schema.records(iter([text])))
            if len(rows) != 1:
                raise InvalidJobError(f"a CSV message holds one row; {text!r} holds {len(rows)}")
            return rows[0]
        except InvalidJobError:
            if self.ignore_parse_errors:
                return None
            raise

    def get_produced_type(self) -> Any:
        """The Row type produced."""
        return self.type_info

    class Builder:
        def __init__(self, type_info: Any) -> None:
            self._type_info = type_info
            self._schema = _schema_for(type_info, "CsvRowDeserializationSchema")
            self._ignore = False

        def _set(self, **changes: Any) -> CsvRowDeserializationSchema.Builder:
            self._schema = replace(self._schema, **changes)
            return self

        def set_field_delimiter(self, delimiter: str):
            return self._set(column_separator=delimiter)

        def set_allow_comments(self, allow_comments: bool):
            return self._set(allow_comments=allow_comments)

        def set_array_element_delimiter(self, delimiter: str):
            return self._set(array_element_separator=delimiter)

        def set_quote_character(self, c: str):
            return self._set(quote_char=c)

        def set_escape_character(self, c: str):
            return self._set(escape_char=c)

        def set_null_literal(self, null_literal: str):
            return self._set(null_value=null_literal)

        def set_ignore_parse_errors(self, ignore_parse_errors: bool):
            self._ignore = bool(ignore_parse_errors)
            return self

        def build(self) -> CsvRowDeserializationSchema:
            return CsvRowDeserializationSchema(self._schema, self._ignore, self._type_info)


@dataclass(frozen=True)
class CsvRowSerializationSchema(SerializationSchema):
    """A Row (or tuple, or dict) of `type_info` as one CSV line (`CsvRowSerializationSchema.Builder(type_info)`)."""

    schema: CsvSchema

    def serialize(self, element: Any) -> bytes:
        """One Row as a CSV line, in bytes.

        Args:
            element: The Row.

        Returns:
            The bytes.
        """
        out = io.StringIO()
        self.schema.write_rows([element], out)
        return out.getvalue().encode("utf-8")

    class Builder:
        def __init__(self, type_info: Any) -> None:
            self._schema = _schema_for(type_info, "CsvRowSerializationSchema")

        def _set(self, **changes: Any) -> CsvRowSerializationSchema.Builder:
            self._schema = replace(self._schema, **changes)
            return self

        def set_field_delimiter(self, c: str):
            return self._set(column_separator=c)

        def set_line_delimiter(self, delimiter: str):
            return self._set(line_separator=delimiter)

        def set_array_element_delimiter(self, delimiter: str):
            return self._set(array_element_separator=delimiter)

        def disable_quote_character(self):
            return self._set(quote_char=None)

        def set_quote_character(self, c: str):
            return self._set(quote_char=c)

        def set_escape_character(self, c: str):
            return self._set(escape_char=c)

        def set_null_literal(self, s: str):
            return self._set(null_value=s)

        def build(self) -> CsvRowSerializationSchema:
            return CsvRowSerializationSchema(self._schema)
