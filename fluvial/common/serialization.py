"""PyFlink's `pyflink.common.serialization`: how records become bytes and bytes become records, outside the
engine (connectors, files), as opposed to `fluvial.common.wire`, the engine's own format between processes.

- `SerializationSchema.serialize(value) -> bytes` and `DeserializationSchema.deserialize(bytes) -> value`:
  one message each (SimpleStringSchema, ByteArraySchema, RowFieldExtractorSchema, and the JSON, CSV and
  Avro row schemas of `fluvial.datastream.formats`);
- `Encoder`: one record into a row-format part file (FileSink.for_row_format);
- `BulkWriterFactory`: a writer that owns a whole part file (FileSink.for_bulk_format; Parquet, ORC, Avro,
  CSV bulk writers). A bulk part file rolls on every checkpoint, as in Flink.

Every schema and factory is picklable data: it travels inside the job to the tasks that use it.
`open(context)` is called once on the task before the first message.
"""

from __future__ import annotations

import abc
import codecs
from typing import Any, BinaryIO

from fluvial.common.encoder import Encoder, SimpleStringEncoder
from fluvial.common.errors import InvalidJobError

__all__ = [
    "BulkWriter",
    "BulkWriterFactory",
    "ByteArraySchema",
    "DeserializationSchema",
    "Encoder",
    "RowFieldExtractorSchema",
    "SerializationSchema",
    "SimpleStringEncoder",
    "SimpleStringSchema",
]


class SerializationSchema(abc.ABC):
    """Turns one record into the bytes of one message."""

    def open(self, context: Any = None) -> None:
        """Called once on the task before the first `serialize`."""

    @abc.abstractmethod
    def serialize(self, element: Any) -> bytes:
        """Turn a record into bytes (for a sink: Kafka, a socket, a file).

        Args:
            element: The record.

        Returns:
            Its bytes.
        """


class DeserializationSchema(abc.ABC):
    """Turns the bytes of one message into one record."""

    def open(self, context: Any = None) -> None:
        """Called once on the task before the first `deserialize`."""

    @abc.abstractmethod
    def deserialize(self, message: bytes) -> Any:
        """Turn bytes into a record (for a source).

        Args:
            message: The bytes.

        Returns:
            The record.
        """

    def is_end_of_stream(self, next_element: Any) -> bool:
        """True when `next_element` marks the end of the stream (it is then not emitted)."""
        return False

    def get_produced_type(self) -> Any:
        """The TypeInformation of the records produced (None: any Python value)."""
        return None


def _charset(charset: str) -> str:
    try:
        return codecs.lookup(charset).name
    except LookupError:
        raise InvalidJobError(f"unknown charset {charset!r}; use a Python codec name such as 'UTF-8'") from None


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """A string as its bytes in a charset (UTF-8 by default), both ways."""

    def __init__(self, charset: str = "UTF-8") -> None:
        self._charset = _charset(charset)

    def get_charset(self) -> str:
        """The charset (UTF-8 by default)."""
        return self._charset

    def serialize(self, element: Any) -> bytes:
        """Encode a str with the schema's charset.

        Args:
            element: The string.

        Returns:
            Its bytes.
        """
        if not isinstance(element, str):
            raise InvalidJobError(
                f"SimpleStringSchema serializes strings, got {type(element).__name__} {element!r}; "
                "map records to str first"
            )
        return element.encode(self._charset)

    def deserialize(self, message: bytes) -> str:
        """Decode bytes with the schema's charset.

        Args:
            message: The bytes.

        Returns:
            The string.
        """
        return bytes(message).decode(self._charset)

    def get_produced_type(self) -> Any:
        """`Types.STRING()`."""
        from fluvial.common.typeinfo import Types

        return Types.STRING()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimpleStringSchema) and other._charset == self._charset

    def __hash__(self) -> int:
        return hash(("SimpleStringSchema", self._charset))


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Bytes as they are, both ways."""

    def serialize(self, element: Any) -> bytes:
        """The bytes as they are.

        Args:
            element: bytes.

        Returns:
            The same bytes.
        """
        if not isinstance(element, (bytes, bytearray, memoryview)):
            raise InvalidJobError(
                f"ByteArraySchema serializes bytes, got {type(element).__name__} {element!r}; "
                "use SimpleStringSchema for strings"
            )
        return bytes(element)

    def deserialize(self, message: bytes) -> bytes:
        """The bytes as they are.

        Args:
            message: The bytes.

        Returns:
            The same bytes.
        """
        return bytes(message)

    def get_produced_type(self) -> Any:
        """The type of a byte array."""
        from fluvial.common.typeinfo import Types

        return Types.PRIMITIVE_ARRAY(Types.BYTE())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByteArraySchema)

    def __hash__(self) -> int:
        return hash("ByteArraySchema")


class RowFieldExtractorSchema(SerializationSchema):
    """One field of a Row as the message (e.g. a Kafka key); the field must already be bytes (Flink's rule:
    converting is the program's choice). A None row or field is an empty message."""

    def __init__(self, field_index: int) -> None:
        if isinstance(field_index, bool) or not isinstance(field_index, int) or field_index < 0:
            raise InvalidJobError(f"Field index must be non-negative, got: {field_index!r}")
        self._field_index = field_index

    def get_field_index(self) -> int:
        """The index of the field written."""
        return self._field_index

    def serialize(self, element: Any) -> bytes:
        """The bytes of one field of a Row.

        Args:
            element: The Row.

        Returns:
            The field's bytes (a str field is UTF-8 encoded).
        """
        if element is None:
            return b""
        try:
            value = element[self._field_index]
        except IndexError:
            raise InvalidJobError(
                f"RowFieldExtractorSchema: field index {self._field_index} is out of range for {element!r} "
                f"({len(element)} fields)"
            ) from None
        if value is None:
            return b""
        if not isinstance(value, (bytes, bytearray)):
            raise InvalidJobError(
                f"RowFieldExtractorSchema: field {self._field_index} must be of type bytes, got "
                f"{type(value).__name__} {value!r}; encode it in the program (e.g. value.encode('utf-8'))"
            )
        return bytes(value)


class BulkWriter(abc.ABC):
    """Writes records into one open part file. Contract, in order: `add_element` for each record, `flush()`
    before a checkpoint may read the file's length, `finish()` once when the part file is closed (it writes
    footers; it must not close the stream, which belongs to the sink)."""

    @abc.abstractmethod
    def add_element(self, element: Any) -> None: ...

    def add_elements(self, elements: list) -> None:
        for element in elements:
            self.add_element(element)

    def flush(self) -> None:
        pass

    @abc.abstractmethod
    def finish(self) -> None: ...


class BulkWriterFactory(abc.ABC):
    """Creates the BulkWriter of one part file (`FileSink.for_bulk_format(path, factory)`)."""

    @abc.abstractmethod
    def create(self, stream: BinaryIO) -> BulkWriter:
        """A BulkWriter that writes a part file to `stream`.

        Args:
            stream: The part file, open for binary writing.

        Returns:
            The writer.
        """

    def file_suffix(self) -> str:
        """The suffix part files get when OutputFileConfig sets none (e.g. `.parquet`)."""
        return ""
