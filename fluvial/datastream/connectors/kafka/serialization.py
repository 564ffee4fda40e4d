"""How records become Kafka messages and back: PyFlink's `KafkaRecordSerializationSchema` (topic or topic
selector, key and value schemas) and `KafkaRecordDeserializationSchema` (value only, or the whole record).

Each schema compiles to one plain function the reader or writer calls per record (`compile`), so the per-record
path pays for nothing it does not use: `SimpleStringSchema` becomes `bytes.decode` / `str.encode` itself.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.serialization import DeserializationSchema, SerializationSchema, SimpleStringSchema


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """What a full-record deserializer sees (Kafka's ConsumerRecord): `value` and `key` are bytes or None,
    `timestamp` ms since the epoch, `headers` a list of (name, bytes) pairs or None."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list | None = None


class KafkaRecordDeserializationSchema(abc.ABC):
    """Turns a whole KafkaRecord into a value; returning None skips the record."""

    def open(self, context: Any = None) -> None:
        pass

    @abc.abstractmethod
    def deserialize(self, record: KafkaRecord) -> Any: ...

    def get_produced_type(self) -> Any:
        return None

    def message_function(self) -> Callable[[Any], Any] | None:
        """A per-record function over the client's message itself (`topic()`, `value()`, `headers()`, ...), which
        the reader calls instead of building a KafkaRecord for `deserialize`; None (the default) for that path."""
        return None

    @staticmethod
    def value_only(value_deserialization_schema: DeserializationSchema) -> KafkaRecordDeserializationSchema:
        """Deserialize only the value with a DeserializationSchema (what `set_value_only_deserializer` does)."""
        return ValueOnlyDeserializer(_checked(value_deserialization_schema, DeserializationSchema, "value"))


class ValueOnlyDeserializer(KafkaRecordDeserializationSchema):
    def __init__(self, schema: DeserializationSchema) -> None:
        self.schema = schema

    def open(self, context: Any = None) -> None:
        self.schema.open(context)

    def deserialize(self, record: KafkaRecord) -> Any:
        return self.schema.deserialize(record.value)

    def get_produced_type(self) -> Any:
        return self.schema.get_produced_type()

    def value_function(self) -> Callable[[bytes], Any]:
        """The per-record function over the value bytes (SimpleStringSchema: the codec's decode itself)."""
        if type(self.schema) is SimpleStringSchema:
            import codecs

            decode = codecs.getdecoder(self.schema.get_charset())
            return lambda data: decode(data)[0] if data is not None else None
        return self.schema.deserialize


class KafkaTopicSelector(abc.ABC):
    """Chooses the topic of each record."""

    @abc.abstractmethod
    def apply(self, value: Any) -> str: ...


class KafkaRecordSerializationSchema:
    """Turns a value into (topic, key bytes or None, value bytes); build with `builder()`."""

    def __init__(
        self,
        topic: str | None,
        topic_selector: Callable[[Any], str] | None,
        key_schema: SerializationSchema | None,
        value_schema: SerializationSchema,
    ) -> None:
        self.topic = topic
        self.topic_selector = topic_selector
        self.key_schema = key_schema
        self.value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def open(self, context: Any = None) -> None:
        self.value_schema.open(context)
        if self.key_schema is not None:
            self.key_schema.open(context)

    def compile(self) -> tuple[Callable[[Any], str] | None, Callable[[Any], bytes], Callable[[Any], bytes] | None]:
        """(topic function or None for the fixed topic, value function, key function or None)."""
        return (
            self.topic_selector,
            _serializer(self.value_schema),
            None if self.key_schema is None else _serializer(self.key_schema),
        )

    def topics(self) -> tuple[str, ...]:
        return () if self.topic is None else (self.topic,)

    def record_function(
        self, subtask_index: int, partition_count: Callable[[str], int]
    ) -> Callable[[Any], tuple | None] | None:
        """For a schema that sets more than topic, key and value: a per-record function of the value to
        (topic, value bytes or None, key bytes or None, partition or -1, timestamp ms or 0, headers or None), or
        None to write nothing for the value; `partition_count(topic)` asks the broker. None (the default): the
        writer uses `compile`."""
        return None


def _serializer(schema: SerializationSchema) -> Callable[[Any], bytes]:
    if type(schema) is SimpleStringSchema:
        charset = schema.get_charset()

        def encode(value: Any) -> bytes:
            return value.encode(charset) if type(value) is str else schema.serialize(value)

        return encode
    return schema.serialize


class KafkaRecordSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._topic: str | None = None
        self._selector: Callable[[Any], str] | None = None
        self._key: SerializationSchema | None = None
        self._value: SerializationSchema | None = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        if self._selector is not None:
            raise InvalidJobError("set_topic and set_topic_selector exclude each other; call one of them")
        if not isinstance(topic, str) or not topic:
            raise InvalidJobError(f"set_topic needs a topic name, got {topic!r}")
        self._topic = topic
        return self

    def set_topic_selector(
        self, topic_selector: KafkaTopicSelector | Callable[[Any], str]
    ) -> KafkaRecordSerializationSchemaBuilder:
        if self._topic is not None:
            raise InvalidJobError("set_topic and set_topic_selector exclude each other; call one of them")
        if isinstance(topic_selector, KafkaTopicSelector):
            self._selector = topic_selector.apply
        elif callable(topic_selector):
            self._selector = topic_selector
        else:
            raise InvalidJobError(
                f"set_topic_selector takes a KafkaTopicSelector or a function of the record, got {topic_selector!r}"
            )
        return self

    def set_key_serialization_schema(
        self, key_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._key = _checked(key_serialization_schema, SerializationSchema, "key")
        return self

    def set_value_serialization_schema(
        self, value_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._value = _checked(value_serialization_schema, SerializationSchema, "value")
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if self._topic is None and self._selector is None:
            raise InvalidJobError(
                "KafkaRecordSerializationSchema needs a topic: call set_topic(name) or set_topic_selector(function)"
            )
        if self._value is None:
            raise InvalidJobError(
                "KafkaRecordSerializationSchema needs a value schema: call "
                "set_value_serialization_schema(SimpleStringSchema()) or another schema"
            )
        return KafkaRecordSerializationSchema(self._topic, self._selector, self._key, self._value)


def _checked(schema: Any, kind: type, role: str) -> Any:
    if not isinstance(schema, kind) and not callable(
        getattr(schema, "serialize" if kind is SerializationSchema else "deserialize", None)
    ):
        raise InvalidJobError(
            f"the {role} schema must be a {kind.__name__} (e.g. SimpleStringSchema()), got {schema!r}"
        )
    return schema
