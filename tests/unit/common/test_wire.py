"""The code wire format (`fluvial.common.wire`): copies of user function objects keep CPython's inline attribute
layout, and every other object keeps pickle's own rules."""

from __future__ import annotations

import sys

import pytest

from fluvial.common.instance_layout import attributes_inline
from fluvial.common.wire import dumps_code, loads_code


class Counting:
    """A user function as users write them: attributes set in __init__, one rebound per record."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.count = 0
        self.me = self  # a cycle, as a function that registers itself somewhere has

    def flat_map(self, value: object) -> list:
        self.count += 1
        return []


def copy_of(obj: object) -> object:
    return loads_code(dumps_code(obj))


# the inline attribute layout, as CPython 3.11 lays it out and gc.get_referents shows it
cpython_311_layout = pytest.mark.skipif(
    sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11),
    reason="checks CPython 3.11's inline attribute layout, which gc.get_referents shows there",
)


@cpython_311_layout
def test_a_copied_user_function_keeps_its_attributes_inline():
    original = Counting("/tmp/out")
    assert attributes_inline(original)
    copy = copy_of(original)
    assert attributes_inline(copy)
    copy.flat_map(1)
    assert attributes_inline(copy)


def test_a_copy_has_the_same_attributes_class_and_cycles():
    original = Counting("/tmp/out")
    original.count = 7
    copy = copy_of(original)
    assert type(copy) is Counting and copy is not original
    assert vars(copy) == {"directory": "/tmp/out", "count": 7, "me": copy}
    assert copy.me is copy


def test_an_instance_without_attributes_stays_without():
    assert vars(copy_of(Counting.__new__(Counting))) == {}


class Hooked:
    def __init__(self) -> None:
        self.value = 1

    def __getstate__(self) -> dict:
        return {"value": self.value + 1}

    def __setstate__(self, state: dict) -> None:
        self.value = state["value"] * 10


class Slotted:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 3


class Shadowed:
    """An attribute in __dict__ under the name of a data descriptor of the class: only pickle's own rule (write
    into __dict__) restores it; a setattr would go to the property."""

    @property
    def value(self) -> int:
        return -1


class Listy(list):
    pass


def test_objects_with_pickling_hooks_slots_builtin_bases_or_shadowed_names_keep_pickles_rules():
    assert copy_of(Hooked()).value == 20
    assert copy_of(Slotted()).value == 3
    shadowed = Shadowed()
    shadowed.__dict__["value"] = 5
    assert vars(copy_of(shadowed)) == {"value": 5}
    listy = Listy([1, 2])
    listy.note = "n"
    copy = copy_of(listy)
    assert copy == [1, 2] and copy.note == "n"


def test_non_string_attribute_names_survive():
    obj = Counting("d")
    obj.__dict__[1] = "one"
    assert copy_of(obj).__dict__[1] == "one"
