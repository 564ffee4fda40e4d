"""Transformations are never mutated once built (a convention `transformations.py` documents instead of paying
for `frozen=True`): every setter of a DataStream or DataStreamSink swaps in a changed copy, so a record another
handle, a compiled StreamGraph or a test already holds keeps what it said."""

from __future__ import annotations

import dataclasses

import pytest

from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream import transformations as t

SETTERS = [
    ("name", ("renamed",), {"name": "renamed"}),
    ("uid", ("my-uid",), {"uid": "my-uid"}),
    ("set_uid_hash", ("hash",), {"uid": "hash"}),
    ("set_description", ("described",), {"description": "described"}),
    ("set_parallelism", (3,), {"parallelism": 3}),
    ("set_max_parallelism", (64,), {"max_parallelism": 64}),
    ("slot_sharing_group", ("group",), {"slot_sharing_group": "group"}),
    ("co_location_group", ("together",), {"co_location_group": "together"}),
    ("start_new_chain", (), {"chaining_strategy": t.ChainingStrategy.HEAD}),
    ("disable_chaining", (), {"chaining_strategy": t.ChainingStrategy.NEVER}),
]


def _fields(transformation: t.Transformation) -> dict:
    return {field.name: getattr(transformation, field.name) for field in dataclasses.fields(transformation)}


@pytest.mark.parametrize("target", ["stream", "sink"])
@pytest.mark.parametrize("setter, arguments, changed", SETTERS, ids=[s[0] for s in SETTERS])
def test_every_setter_replaces_the_transformation_and_leaves_the_old_one_as_it_was(
    target, setter, arguments, changed
) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1, 2, 3]).map(lambda v: v)
    handle = stream if target == "stream" else stream.print()
    before = handle._transformation
    fields_before = _fields(before)
    assert getattr(handle, setter)(*arguments) is handle
    after = handle._transformation
    assert after is not before, f"{setter} changed the transformation in place"
    assert _fields(before) == fields_before
    assert {name: value for name, value in _fields(after).items() if fields_before[name] != value} == changed


def test_operator_and_partitioner_descriptions_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.MapSpec(function=len).function = abs  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.PartitionerSpec(t.PartitionerKind.FORWARD).kind = t.PartitionerKind.HASH  # type: ignore[misc]
