"""How keyed state is laid out as RocksDB bytes: Flink's key layout, with pickle as the serializer.

Data keys (one RocksDB entry per key, or per user map key for MapState, Flink's layout):

    key group (2 bytes, big-endian) | state id (2 bytes, big-endian) | serialized key [| serialized user map key]

Why the key group comes first: RocksDB sorts keys bytewise, so a key group is one contiguous range of the
database. A snapshot walks the database in key-group order, and a restore at another parallelism keeps or
drops whole ranges (`delete_range`) without decoding a single key.

Meta keys start with META_PREFIX (0xFFFF). Key groups are below UPPER_BOUND_MAX_PARALLELISM (0x8000), so no data
key can start with 0xFFFF and a scan of data ranges never meets meta entries:

    META_PREFIX | b"s" | state name (UTF-8)   -> pickle((state id, StateKind value))
    META_PREFIX | b"p"                        -> pickle(max_parallelism)

Keys are compared by their serialized bytes (as Flink compares keys by their serializer's bytes), so the
serialization of a key must be canonical - equal keys must give equal bytes. `pickle.dumps` is not: it
memoizes repeated objects, so `("ab", "ab")` pickles differently when both elements are one str object than
when they are two equal ones. `KeySerializer` therefore pickles with the memo off (the pickler's fast mode).
Hazards that remain, documented for users in the backend: keys that are equal in Python but of different types
(`1`, `1.0`, `True`; `0.0` and `-0.0`) are DIFFERENT keys here, and a frozenset (or an object whose pickle
contains a set or dict built in another order) may pickle differently in another process.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from fluvial.common.errors import StateError

KEY_GROUP_BYTES = 2
STATE_ID_BYTES = 2
PREFIX_BYTES = KEY_GROUP_BYTES + STATE_ID_BYTES
MAX_STATE_ID = (1 << (8 * STATE_ID_BYTES)) - 1

META_PREFIX = b"\xff\xff"
STATE_META_PREFIX = META_PREFIX + b"s"
MAX_PARALLELISM_KEY = META_PREFIX + b"p"
DATA_START = b"\x00\x00"  # every data key is >= this and < META_PREFIX

# A pickle of one of these holds a single object, so pickle.dumps is canonical for it and faster than the
# memo-less pickler. The choice depends on the key's type alone, so one key always gets one encoding.
_SINGLE_OBJECT_TYPES: frozenset[type] = frozenset({int, str, bytes, float, bool, type(None)})


def key_group_prefix(key_group: int) -> bytes:
    return key_group.to_bytes(KEY_GROUP_BYTES, "big")


def state_id_bytes(state_id: int) -> bytes:
    return state_id.to_bytes(STATE_ID_BYTES, "big")


def state_meta_key(name: str) -> bytes:
    return STATE_META_PREFIX + name.encode("utf-8", "surrogatepass")


def prefix_end(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string starting with `prefix` (an exclusive upper bound).

    Never called with an all-0xFF prefix: data prefixes start with a key group below 0x8000.
    """
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes((stripped[-1] + 1,))


class KeySerializer:
    """Canonical bytes for a key or a user map key: equal values of one type give equal bytes (see module doc).

    One instance per backend: it reuses one memo-less pickler and buffer, so it is not thread-safe (a backend
    has one thread, DESIGN 4).
    """

    __slots__ = ("_buffer", "_pickler")

    def __init__(self) -> None:
        self._buffer = io.BytesIO()
        self._pickler = pickle.Pickler(self._buffer, protocol=5)
        self._pickler.fast = True  # no memo: repeated objects are written out in full, so bytes follow values

    def __call__(self, key: Any) -> bytes:
        if type(key) in _SINGLE_OBJECT_TYPES:
            return pickle.dumps(key, protocol=5)
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        try:
            self._pickler.dump(key)
        except Exception as error:
            raise StateError(
                f"key {_short_repr(key)} of type {type(key).__name__} cannot be stored in RocksDB state: pickling "
                f"it failed ({error}); key by a str, int or tuple of them"
            ) from error
        return buffer.getvalue()


def dump_value(value: Any, state_name: str) -> bytes:
    """The stored bytes of a state value (pickle protocol 5); StateError naming the state when it cannot pickle."""
    try:
        return pickle.dumps(value, protocol=5)
    except Exception as error:
        raise StateError(
            f"a value of type {type(value).__name__} cannot be stored in RocksDB state {state_name!r}: pickling it "
            f"failed ({error}); store picklable data (the RocksDB backend serializes every value), or use "
            "HashMapStateBackend"
        ) from error


load = pickle.loads  # ignores bytes after the pickle's STOP, so it also reads the key part of a map entry


def split_key(raw: bytes, offset: int) -> tuple[Any, int]:
    """Read the pickled key starting at `offset` of `raw`; return it and the offset just past it.

    Pickles are self-delimiting (they end at the STOP opcode) and prefix-free, which is why a map entry can hold
    the key and the user map key back to back without a length field.
    """
    stream = io.BytesIO(raw)
    stream.seek(offset)
    key = pickle.Unpickler(stream).load()
    return key, stream.tell()


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
