"""The `_metadata` format (issue 13, defects 10 and 11): JSON with a version, parsed without running code, strict
about its schema, and relative for the files of the checkpoint's own directory."""

from __future__ import annotations

import json
import os
import pickle
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.checkpoint.metadata import (
    ByteStreamStateHandle,
    CheckpointMetadata,
    CorruptCheckpointError,
    FileStateHandle,
    OperatorState,
    SubtaskState,
    checksum,
)
from fluvial.checkpoint.metadata_format import (
    METADATA_HEADER,
    METADATA_MAGIC,
    METADATA_VERSION,
    decode_metadata,
    encode_metadata,
)

DIRECTORY = "file:///ckpt/job/chk-3"


def _blob(payload: bytes, version: int = METADATA_VERSION) -> bytes:
    return METADATA_HEADER.pack(METADATA_MAGIC, version, len(payload), checksum(payload)) + payload


def _document(metadata: CheckpointMetadata) -> dict:
    return json.loads(encode_metadata(metadata, DIRECTORY)[METADATA_HEADER.size :])


def _sample(*handles, raw=None) -> CheckpointMetadata:
    subtask = SubtaskState(keyed=list(handles), operator=[], raw=raw or {"offset": 42}, shared=[])
    return CheckpointMetadata(3, 1_700_000_000_000, "job", False, {"op": OperatorState("op", 2, 128, {1: subtask})})


class _Planted:
    """Unpickling this makes a directory: the proof that a pickle ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


@pytest.mark.parametrize("version", [1, METADATA_VERSION])
def test_a_planted_pickle_never_runs(tmp_path, version):
    marker = tmp_path / "pwned"
    blob = _blob(pickle.dumps(_Planted(str(marker)), protocol=5), version)
    with pytest.raises(CorruptCheckpointError) as caught:
        decode_metadata(blob, "file:///evil/chk-1/_metadata")
    assert not marker.exists()
    expected = "never read, because unpickling a file can run any code" if version == 1 else "not valid JSON"
    assert expected in str(caught.value) and "file:///evil/chk-1/_metadata" in str(caught.value)


def test_files_inside_the_checkpoint_directory_are_written_relative_and_resolved_where_read():
    inside = FileStateHandle(f"{DIRECTORY}/op-1-keyed", 10, 7)
    outside = FileStateHandle("file:///ckpt/job/shared/abc-op-1.sst", 20, 8)
    lookalike = FileStateHandle(f"{DIRECTORY}-old/x", 5, 9)  # a sibling whose name starts the same
    blob = encode_metadata(_sample(inside, outside, lookalike), DIRECTORY)
    written = json.loads(blob[METADATA_HEADER.size :])["operators"][0]["subtasks"][0]["keyed"]
    assert [(h["path"], h["relative"]) for h in written] == [
        ("op-1-keyed", True),
        (outside.path, False),
        (lookalike.path, False),
    ]
    moved = decode_metadata(blob, "file:///elsewhere/sp/chk-3/_metadata")
    paths = [h.path for h in moved.operator_states["op"].subtask_states[1].keyed]
    assert paths == ["file:///elsewhere/sp/chk-3/op-1-keyed", outside.path, lookalike.path]


@pytest.mark.parametrize("path", ["../chk-2/op", "/etc/passwd", "a/../../b", "", "file:///x"])
def test_a_relative_path_that_leaves_the_directory_is_corrupt(path):
    document = _document(_sample(FileStateHandle(f"{DIRECTORY}/op", 1, 1)))
    document["operators"][0]["subtasks"][0]["keyed"][0]["path"] = path
    with pytest.raises(CorruptCheckpointError, match="relative path leaving the checkpoint directory"):
        decode_metadata(_blob(json.dumps(document).encode()), "file:///ckpt/job/chk-3/_metadata")


def test_a_relative_path_without_a_directory_to_resolve_it_is_corrupt():
    blob = encode_metadata(_sample(FileStateHandle(f"{DIRECTORY}/op", 1, 1)), DIRECTORY)
    with pytest.raises(CorruptCheckpointError, match="not read from a directory"):
        decode_metadata(blob, "jobmanager://job/chk-3")


_MUTATIONS = {
    "unknown top-level key": (lambda d: d.update(extra=1), "unknown extra"),
    "missing key": (lambda d: d.pop("job_id"), "missing job_id"),
    "bool for an int": (lambda d: d.update(checkpoint_id=True), "checkpoint_id of type boolean, expected int"),
    "negative parallelism": (lambda d: d["operators"][0].update(parallelism=0), "at least 1"),
    "string for the operators": (lambda d: d.update(operators="x"), "operators of type string"),
    "unknown handle kind": (
        lambda d: d["operators"][0]["subtasks"][0]["keyed"][0].update(kind="pickle"),
        "kind 'pickle'",
    ),
    "bad base64": (lambda d: d["operators"][0]["subtasks"][0]["keyed"][0].update(data="!!"), "not base64"),
    "checksum too large": (
        lambda d: d["operators"][0]["subtasks"][0]["keyed"][0].update(checksum=2**40),
        "not a crc32",
    ),
    "a subtask twice": (
        lambda d: d["operators"][0]["subtasks"].append(d["operators"][0]["subtasks"][0]),
        "subtask 1 twice",
    ),
    "raw not an object": (lambda d: d["operators"][0]["subtasks"][0].update(raw=[1]), "raw of type array"),
}


@pytest.mark.parametrize("mutation", sorted(_MUTATIONS))
def test_anything_off_schema_is_corrupt_and_named(mutation):
    mutate, expected = _MUTATIONS[mutation]
    document = _document(_sample(ByteStreamStateHandle("n", b"data", checksum(b"data"))))
    mutate(document)
    with pytest.raises(CorruptCheckpointError, match="cannot be used") as caught:
        decode_metadata(_blob(json.dumps(document).encode()), "file:///c/chk-3/_metadata")
    assert expected in str(caught.value) and "file:///c/chk-3/_metadata" in str(caught.value)


def test_nan_in_the_payload_is_corrupt():
    payload = encode_metadata(_sample(raw={"x": 1}))[METADATA_HEADER.size :].replace(b'"x":1', b'"x":NaN')
    with pytest.raises(CorruptCheckpointError, match="not valid JSON"):
        decode_metadata(_blob(payload), "here")


@pytest.mark.parametrize("value", [(1, 2), {1: "a"}, b"bytes", float("inf"), object()])
def test_raw_values_that_json_cannot_hold_are_refused_when_written(value):
    with pytest.raises(ValueError, match="raw state 'x'"):
        encode_metadata(_sample(raw={"x": value}))


def test_the_header_still_guards_against_damage():
    blob = bytearray(encode_metadata(_sample()))
    assert struct.unpack_from(">H", blob, 8)[0] == METADATA_VERSION
    blob[-2] ^= 0x10
    with pytest.raises(CorruptCheckpointError, match="corrupted"):
        decode_metadata(bytes(blob), "here")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_checksums = st.integers(0, 0xFFFFFFFF)
_inline = st.builds(ByteStreamStateHandle, st.text(min_size=1), st.binary(max_size=64), _checksums)
_names = st.text("abcdefgh-_.0123456789", min_size=1, max_size=12).filter(lambda n: n not in (".", ".."))
_file = st.builds(
    FileStateHandle,
    st.one_of(_names.map(lambda n: f"{DIRECTORY}/{n}"), _names.map(lambda n: f"memory:///other/{n}")),
    st.integers(0, 2**40),
    _checksums,
)
_handles = st.lists(_inline | _file, max_size=3)
_subtasks = st.builds(
    SubtaskState, _handles, _handles, st.dictionaries(st.text(), _json_values, max_size=3), _handles, st.booleans()
)


@st.composite
def _metadata(draw) -> CheckpointMetadata:
    operators = {}
    for operator_id in draw(st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=3)):
        parallelism = draw(st.integers(1, 4))
        subtasks = draw(st.dictionaries(st.integers(0, parallelism - 1), _subtasks, max_size=parallelism))
        operators[operator_id] = OperatorState(operator_id, parallelism, draw(st.integers(1, 1024)), subtasks)
    return CheckpointMetadata(
        draw(st.integers(0, 2**62)), draw(st.integers(-(2**62), 2**62)), draw(st.text()), draw(st.booleans()), operators
    )


@settings(max_examples=60, deadline=None)
@given(_metadata())
def test_metadata_round_trips_through_its_own_directory(metadata):
    assert decode_metadata(encode_metadata(metadata, DIRECTORY), f"{DIRECTORY}/_metadata") == metadata


def test_version_2_files_still_read_with_no_subtask_finished():
    """Version 3 added `finished` (FLIP-147); a checkpoint written before it restores as it always did."""
    document = _document(_sample(ByteStreamStateHandle("s", b"x", checksum(b"x"))))
    for operator in document["operators"]:
        for subtask in operator["subtasks"]:
            assert subtask.pop("finished") is False
            assert subtask.pop("input_channel") == []
    metadata = decode_metadata(_blob(json.dumps(document).encode(), version=2), f"{DIRECTORY}/_metadata")
    assert not metadata.operator_states["op"].subtask_states[1].finished
    with pytest.raises(CorruptCheckpointError, match="wrong keys.*missing finished, input_channel"):
        decode_metadata(_blob(json.dumps(document).encode()), f"{DIRECTORY}/_metadata")


def test_version_3_files_still_read_with_no_in_flight_data():
    """Version 4 added `input_channel` (unaligned checkpoints); a version 3 checkpoint has none."""
    document = _document(_sample(ByteStreamStateHandle("s", b"x", checksum(b"x"))))
    for operator in document["operators"]:
        for subtask in operator["subtasks"]:
            subtask.pop("input_channel")
    metadata = decode_metadata(_blob(json.dumps(document).encode(), version=3), f"{DIRECTORY}/_metadata")
    assert metadata.operator_states["op"].subtask_states[1].input_channel == []


def test_in_flight_data_handles_round_trip():
    handle = ByteStreamStateHandle("c", b"y", checksum(b"y"))
    metadata = CheckpointMetadata(
        3, 0, "job", operator_states={"op": OperatorState("op", 1, 128, {0: SubtaskState(input_channel=[handle])})}
    )
    decoded = decode_metadata(encode_metadata(metadata), f"{DIRECTORY}/_metadata")
    assert decoded.operator_states["op"].subtask_states[0].input_channel == [handle]
