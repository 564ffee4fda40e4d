"""Stand-ins (`fluvial.common.instance_layout`): what runs in place of a user's object whose attribute layout
pickling made slow, and what the object gets back."""

from __future__ import annotations

from fluvial.common.instance_layout import attributes_inline, stand_in, write_back
from tests.unit.common.test_wire import Counting, Slotted, cpython_311_layout


@cpython_311_layout
def test_a_stand_in_of_a_pickled_object_is_back_on_the_inline_layout():
    original = Counting("/tmp/out")
    vars(original)  # what pickling it for the job's templates does
    assert not attributes_inline(original)
    assert attributes_inline(stand_in(original))


def test_a_stand_in_shares_the_values_and_writes_back_what_it_rebound():
    seen: list[int] = []
    original = Counting("/tmp/out")
    original.seen = seen
    twin = stand_in(original)
    assert type(twin) is Counting and twin is not original
    assert twin.seen is seen and twin.me is twin  # the cycle points at the stand-in while it runs
    twin.flat_map(1)
    twin.flat_map(2)
    twin.seen.append(3)
    assert seen == [3]  # appended in place: the user sees it at once
    assert original.count == 0  # a rebound attribute comes back when the run ends
    write_back(original, twin)
    assert original.count == 2 and original.me is original and original.seen is seen


def test_objects_that_are_not_plain_run_as_themselves():
    slotted = Slotted()
    assert stand_in(slotted) is slotted
    bound = [].append
    assert stand_in(bound) is bound
    write_back(slotted, slotted)
    assert slotted.value == 3
