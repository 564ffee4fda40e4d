"""The `_metadata` file of a checkpoint or savepoint: a versioned, explicit format parsed without running code.

A `_metadata` file is the one thing a restore reads before anything else, and it names every state file. It
used to be a pickle, so a forged `_metadata` ran code the moment a job restored from it. Now it is data only:

    header   magic b"FLUVCKPT" | format version (u16) | payload length (u64) | CRC-32 of the payload (u32)
    payload  UTF-8 JSON, with the schema below

The CRC detects accidental damage (a truncated upload, a flipped bit); it is not a signature. Decoding checks
every key and every type, refuses unknown keys, and raises CorruptCheckpointError naming the file and the
field. Versions:
1. a pickle (fluvial before issue 13). Never read: unpickling a file runs whatever code it names.
2. JSON (this module):

    {"checkpoint_id": int >= 0, "timestamp": int, "job_id": str, "is_savepoint": bool,
     "operators": [{"operator_id": str, "parallelism": int >= 1, "max_parallelism": int >= 1,
                    "subtasks": [{"index": int >= 0, "keyed": [handle], "operator": [handle],
                                  "shared": [handle], "raw": {str: JSON value}}]}]}
3. version 2 with `"finished": bool` in every subtask: it had finished when the checkpoint was
   taken (FLIP-147). Version 2 files are read as if every subtask had `"finished": false`.
4. (written now) version 3 with `"input_channel": [handle]` in every subtask: the in-flight data of an
   unaligned checkpoint (empty for aligned ones). Earlier versions are read with none.
    handle = {"kind": "inline", "name": str, "data": base64 str, "checksum": u32}
           | {"kind": "file", "path": str, "relative": bool, "size": int >= 0, "checksum": u32}

Relocation (as Flink's RelativeFileStateHandle): a file inside the checkpoint's own directory is written with a
path relative to that directory (`"relative": true`), and resolved against wherever `_metadata` is read from.
So a savepoint directory, or a checkpoint's `chk-<n>` directory, can be moved or copied and restored from its
new place. Files outside it — the shared files of incremental RocksDB checkpoints, which live in
`<job dir>/shared/` — keep their full URLs, as in Flink. (Incremental RocksDB checkpoints do not relocate at
all: the list of their files is pickled inside their keyed state, with full URLs. Savepoints never use that
form, so every savepoint relocates.)

What the payload does not make safe: the state files and inline state it points to are pickled user values
(keyed state, operator state), unpickled on restore. Only restore checkpoints you trust (docs/operations/security.md).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import posixpath
import struct
from typing import Any, TypeVar

from fluvial.checkpoint.metadata import (
    CHECKSUM_ALGORITHM,
    ByteStreamStateHandle,
    CheckpointMetadata,
    CorruptCheckpointError,
    FileStateHandle,
    OperatorState,
    StateHandle,
    SubtaskState,
    checksum,
)

METADATA_FILE_NAME = "_metadata"
METADATA_MAGIC = b"FLUVCKPT"
METADATA_VERSION = 4
READABLE_VERSIONS = (2, 3, 4)
PICKLE_METADATA_VERSION = 1
METADATA_HEADER = struct.Struct(">8sHQI")  # magic, format version, payload length, crc32 of the payload

_TOP_KEYS = frozenset({"checkpoint_id", "timestamp", "job_id", "is_savepoint", "operators"})
_OPERATOR_KEYS = frozenset({"operator_id", "parallelism", "max_parallelism", "subtasks"})
_SUBTASK_KEYS_V2 = frozenset({"index", "keyed", "operator", "shared", "raw"})
_SUBTASK_KEYS_V3 = _SUBTASK_KEYS_V2 | {"finished"}
_SUBTASK_KEYS = _SUBTASK_KEYS_V3 | {"input_channel"}
_INLINE_KEYS = frozenset({"kind", "name", "data", "checksum"})
_FILE_KEYS = frozenset({"kind", "path", "relative", "size", "checksum"})
_HANDLE_LISTS = ("keyed", "operator", "shared")
_HANDLE_LISTS_V4 = _HANDLE_LISTS + ("input_channel",)

T = TypeVar("T")


# -- encoding -----------------------------------------------------------------------------------------------------


def encode_metadata(metadata: CheckpointMetadata, directory: str | None = None) -> bytes:
    """The bytes of a `_metadata` file for `metadata`. `directory` is the URL of the checkpoint directory the
    file is written into: handles of files inside it are written relative to it. ValueError when a `raw`
    value is not a JSON value (a programming error: such values belong in operator state)."""
    prefix = directory.rstrip("/") + "/" if directory else None
    document = {
        "checkpoint_id": metadata.checkpoint_id,
        "timestamp": metadata.timestamp,
        "job_id": metadata.job_id,
        "is_savepoint": metadata.is_savepoint,
        "operators": [
            {
                "operator_id": operator.operator_id,
                "parallelism": operator.parallelism,
                "max_parallelism": operator.max_parallelism,
                "subtasks": [
                    _encode_subtask(index, subtask, prefix, f"operator {operator.operator_id!r} subtask {index}")
                    for index, subtask in sorted(operator.subtask_states.items())
                ],
            }
            for operator in metadata.operator_states.values()
        ],
    }
    payload = json.dumps(document, allow_nan=False, separators=(",", ":")).encode()
    return METADATA_HEADER.pack(METADATA_MAGIC, METADATA_VERSION, len(payload), checksum(payload)) + payload


def _encode_subtask(index: int, subtask: SubtaskState, prefix: str | None, where: str) -> dict[str, Any]:
    for key, value in subtask.raw.items():
        if not isinstance(key, str):
            raise ValueError(f"raw state keys of {where} must be strings for the checkpoint metadata, got {key!r}")
        _require_json_value(value, f"raw state {key!r} of {where}")
    encoded: dict[str, Any] = {"index": index, "raw": subtask.raw, "finished": subtask.finished}
    for name in _HANDLE_LISTS_V4:
        encoded[name] = [_encode_handle(handle, prefix) for handle in getattr(subtask, name)]
    return encoded


def _encode_handle(handle: StateHandle, prefix: str | None) -> dict[str, Any]:
    if isinstance(handle, ByteStreamStateHandle):
        return {
            "kind": "inline",
            "name": handle.name,
            "data": base64.b64encode(handle.data).decode("ascii"),
            "checksum": handle.checksum,
        }
    if isinstance(handle, FileStateHandle):
        relative = (
            prefix is not None and handle.path.startswith(prefix) and _is_relative_path(handle.path[len(prefix) :])
        )
        path = handle.path[len(prefix) :] if relative and prefix is not None else handle.path
        return {"kind": "file", "path": path, "relative": relative, "size": handle.size, "checksum": handle.checksum}
    raise TypeError(f"not a state handle: {type(handle).__name__}")


def _require_json_value(value: Any, where: str) -> None:
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        if math.isfinite(value):
            return
        raise ValueError(f"{where} is {value!r}; the checkpoint metadata holds finite numbers only")
    if isinstance(value, list):
        for index, item in enumerate(value):
            _require_json_value(item, f"{where}[{index}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} has the key {key!r}; the checkpoint metadata holds str keys only")
            _require_json_value(item, f"{where}[{key!r}]")
        return
    raise ValueError(
        f"{where} is a {type(value).__name__}, which the checkpoint metadata (JSON) cannot hold; keep raw state "
        "to None, bool, int, float, str, lists and dicts with str keys, or put the value in operator state"
    )


def _is_relative_path(path: str) -> bool:
    """A path that stays inside the directory it is relative to (what a forged file must not escape)."""
    return (
        bool(path)
        and not path.startswith("/")
        and "://" not in path
        and "\\" not in path
        and posixpath.normpath(path) == path
        and path != ".."
        and not path.startswith("../")
    )


# -- decoding -----------------------------------------------------------------------------------------------------


class _Reader:
    """Checks one decoded document against the schema; every failure names the file and the field."""

    def __init__(self, where: str, directory: str | None) -> None:
        self.where = where
        self.directory = directory
        self.version = METADATA_VERSION

    def corrupt(self, problem: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"checkpoint metadata {self.where} {problem}; the checkpoint cannot be used — restore from an older "
            "checkpoint or a savepoint"
        )

    def obj(self, value: Any, keys: frozenset[str], field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.corrupt(f"has {field} of type {_json_type(value)}, expected an object")
        if set(value) != keys:
            missing, unknown = sorted(keys - set(value)), sorted(set(value) - keys)
            detail = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unknown {', '.join(unknown)}" if unknown else "",
                )
                if part
            )
            raise self.corrupt(f"has {field} with the wrong keys ({detail})")
        return value

    def typed(self, value: object, kind: type[T], field: str, minimum: int | None = None) -> T:
        if type(value) is not kind:  # noqa: E721 - bool is an int subclass, and an int is not a bool here
            raise self.corrupt(f"has {field} of type {_json_type(value)}, expected {kind.__name__}")
        if minimum is not None and isinstance(value, int) and value < minimum:
            raise self.corrupt(f"has {field} = {value}, expected at least {minimum}")
        return value

    def handle(self, value: Any, field: str) -> StateHandle:
        if not isinstance(value, dict):
            raise self.corrupt(f"has {field} of type {_json_type(value)}, expected a state handle object")
        kind = value.get("kind")
        if kind == "inline":
            value = self.obj(value, _INLINE_KEYS, field)
            try:
                data = base64.b64decode(self.typed(value["data"], str, f"{field}.data"), validate=True)
            except (binascii.Error, ValueError):
                raise self.corrupt(f"has {field}.data that is not base64") from None
            return ByteStreamStateHandle(
                self.typed(value["name"], str, f"{field}.name"),
                data,
                self.checksum(value["checksum"], f"{field}.checksum"),
            )
        if kind == "file":
            value = self.obj(value, _FILE_KEYS, field)
            path = self.typed(value["path"], str, f"{field}.path")
            if self.typed(value["relative"], bool, f"{field}.relative"):
                path = self.resolve(path, field)
            elif "://" not in path:
                raise self.corrupt(f"has {field}.path {path!r}, which is neither relative nor a full URL")
            return FileStateHandle(
                path,
                self.typed(value["size"], int, f"{field}.size", 0),
                self.checksum(value["checksum"], f"{field}.checksum"),
            )
        raise self.corrupt(f"has {field}.kind {kind!r}, expected 'inline' or 'file'")

    def checksum(self, value: Any, field: str) -> int:
        number = self.typed(value, int, field, 0)
        if number > 0xFFFFFFFF:
            raise self.corrupt(f"has {field} = {number}, which is not a {CHECKSUM_ALGORITHM}")
        return number

    def resolve(self, path: str, field: str) -> str:
        if not _is_relative_path(path):
            raise self.corrupt(f"has {field}.path {path!r}, a relative path leaving the checkpoint directory")
        if self.directory is None:
            raise self.corrupt(f"has a relative {field}.path {path!r}, but it was not read from a directory")
        return posixpath.join(self.directory.rstrip("/"), path)

    def raw(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.corrupt(f"has {field} of type {_json_type(value)}, expected an object")
        return value


def decode_metadata(blob: bytes, where: str, directory: str | None = None) -> CheckpointMetadata:
    """The metadata in `blob`, read from `where` (named in every error); CorruptCheckpointError if it is
    damaged or not a version this fluvial reads. Relative file paths are resolved against `directory`, which
    defaults to the directory of `where` when `where` is a `_metadata` file."""
    if directory is None and posixpath.basename(where.rstrip("/")) == METADATA_FILE_NAME:
        directory = posixpath.dirname(where.rstrip("/"))
    reader = _Reader(where, directory)
    payload = _checked_payload(blob, reader)
    try:
        document = json.loads(bytes(payload).decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as error:
        raise reader.corrupt(f"is not valid JSON ({error})") from None
    return _decode_document(document, reader)


def _checked_payload(blob: bytes, reader: _Reader) -> memoryview:
    if len(blob) < METADATA_HEADER.size:
        raise reader.corrupt(f"is truncated: {len(blob)} bytes, shorter than its {METADATA_HEADER.size}-byte header")
    magic, version, length, expected = METADATA_HEADER.unpack_from(blob)
    if magic != METADATA_MAGIC:
        raise reader.corrupt("is not a fluvial checkpoint metadata file (wrong magic bytes)")
    if version == PICKLE_METADATA_VERSION:
        raise reader.corrupt(
            f"has format version {version}, a pickle written by an older fluvial; it is never read, because "
            f"unpickling a file can run any code (this fluvial reads version {METADATA_VERSION}, JSON)"
        )
    if version not in READABLE_VERSIONS:
        raise reader.corrupt(
            f"has format version {version}, which this fluvial does not read "
            f"(it reads {' and '.join(map(str, READABLE_VERSIONS))})"
        )
    reader.version = version
    payload = memoryview(blob)[METADATA_HEADER.size :]
    if len(payload) != length:
        raise reader.corrupt(f"is truncated: the header announces {length} bytes of payload, found {len(payload)}")
    if checksum(payload) != expected:
        raise reader.corrupt(
            f"is corrupted: {CHECKSUM_ALGORITHM} {checksum(payload):08x} does not match {expected:08x}"
        )
    return payload


def _decode_document(document: Any, reader: _Reader) -> CheckpointMetadata:
    top = reader.obj(document, _TOP_KEYS, "its top level")
    operators: dict[str, OperatorState] = {}
    if not isinstance(top["operators"], list):
        raise reader.corrupt(f"has operators of type {_json_type(top['operators'])}, expected an array")
    for position, value in enumerate(top["operators"]):
        field = f"operators[{position}]"
        operator = reader.obj(value, _OPERATOR_KEYS, field)
        operator_id = reader.typed(operator["operator_id"], str, f"{field}.operator_id")
        if operator_id in operators:
            raise reader.corrupt(f"names operator {operator_id!r} twice")
        subtasks = _decode_subtasks(operator["subtasks"], reader, field)
        operators[operator_id] = OperatorState(
            operator_id,
            reader.typed(operator["parallelism"], int, f"{field}.parallelism", 1),
            reader.typed(operator["max_parallelism"], int, f"{field}.max_parallelism", 1),
            subtasks,
        )
    return CheckpointMetadata(
        reader.typed(top["checkpoint_id"], int, "checkpoint_id", 0),
        reader.typed(top["timestamp"], int, "timestamp"),
        reader.typed(top["job_id"], str, "job_id"),
        reader.typed(top["is_savepoint"], bool, "is_savepoint"),
        operators,
    )


def _decode_subtasks(values: Any, reader: _Reader, field: str) -> dict[int, SubtaskState]:
    if not isinstance(values, list):
        raise reader.corrupt(f"has {field}.subtasks of type {_json_type(values)}, expected an array")
    subtasks: dict[int, SubtaskState] = {}
    for position, value in enumerate(values):
        where = f"{field}.subtasks[{position}]"
        keys = _SUBTASK_KEYS if reader.version >= 4 else _SUBTASK_KEYS_V3 if reader.version == 3 else _SUBTASK_KEYS_V2
        subtask = reader.obj(value, keys, where)
        index = reader.typed(subtask["index"], int, f"{where}.index", 0)
        if index in subtasks:
            raise reader.corrupt(f"has subtask {index} twice in {field}")
        lists: dict[str, list[StateHandle]] = {"input_channel": []}
        for name in _HANDLE_LISTS_V4 if reader.version >= 4 else _HANDLE_LISTS:
            handles = subtask[name]
            if not isinstance(handles, list):
                raise reader.corrupt(f"has {where}.{name} of type {_json_type(handles)}, expected an array")
            lists[name] = [reader.handle(handle, f"{where}.{name}[{i}]") for i, handle in enumerate(handles)]
        finished = reader.typed(subtask["finished"], bool, f"{where}.finished") if reader.version >= 3 else False
        subtasks[index] = SubtaskState(
            keyed=lists["keyed"],
            operator=lists["operator"],
            raw=reader.raw(subtask["raw"], f"{where}.raw"),
            shared=lists["shared"],
            input_channel=lists["input_channel"],
            finished=finished,
        )
    return subtasks


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


_JSON_TYPES: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)
