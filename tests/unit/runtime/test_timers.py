"""InternalTimerService on its own: a fake keyed backend (just `current_key`), a fake processing-time service
(a manual clock that records the wake-ups asked of it) and a triggerable that records what fired with which
current key. Ordering, deduplication, deletion, per-key and per-namespace identity, processing-time wake-ups,
and snapshot/restore into a fresh service."""

from __future__ import annotations

import pickle
import random
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import StateError
from fluvial.common.time import MAX_WATERMARK, MIN_WATERMARK, ManualClock
from fluvial.runtime.timers import (
    InternalTimerService,
    KeyedTimerService,
    NonKeyedTimerService,
    Timer,
)
from fluvial.testing import ManualProcessingTime


class FakeBackend:
    def __init__(self) -> None:
        self.current_key = None


class Recorder:
    def __init__(self, backend: FakeBackend) -> None:
        self.backend = backend
        self.fired: list[tuple[str, Timer, object]] = []
        self.on_fire = None

    def on_event_time(self, timer: Timer) -> None:
        self.fired.append(("event", timer, self.backend.current_key))
        if self.on_fire:
            self.on_fire(timer)

    def on_processing_time(self, timer: Timer) -> None:
        self.fired.append(("processing", timer, self.backend.current_key))
        if self.on_fire:
            self.on_fire(timer)


def make_service(now: int = 0):
    backend = FakeBackend()
    recorder = Recorder(backend)
    clock = ManualProcessingTime(ManualClock(now))
    return InternalTimerService(backend, recorder, clock), backend, recorder, clock


def register(service, backend, key, timestamp, namespace=None, processing=False):
    backend.current_key = key
    if processing:
        service.register_processing_time_timer(timestamp, namespace)
    else:
        service.register_event_time_timer(timestamp, namespace)


def fired(recorder, domain="event"):
    return [(timer.key, timer.timestamp) for kind, timer, _ in recorder.fired if kind == domain]


# -- event time -------------------------------------------------------------------------------------------------


def test_event_timers_fire_in_timestamp_order_with_their_key_current():
    service, backend, recorder, _ = make_service()
    for key, ts in [("b", 30), ("a", 10), ("c", 20), ("a", 40), ("b", 5)]:
        register(service, backend, key, ts)
    backend.current_key = "unrelated"
    service.advance_watermark(100)
    assert fired(recorder) == [("b", 5), ("a", 10), ("c", 20), ("b", 30), ("a", 40)]
    assert all(timer.key == current for _, timer, current in recorder.fired)  # the key was made current
    assert service.event_timer_count() == 0


def test_equal_timestamps_fire_in_registration_order():
    service, backend, recorder, _ = make_service()
    for key in ["z", "a", "m"]:
        register(service, backend, key, 50)
    service.advance_watermark(50)
    assert fired(recorder) == [("z", 50), ("a", 50), ("m", 50)]


def test_watermark_fires_only_timers_at_or_below_it():
    service, backend, recorder, _ = make_service()
    for ts in [10, 20, 30]:
        register(service, backend, "k", ts)
    assert service.current_watermark == MIN_WATERMARK
    service.advance_watermark(19)
    assert fired(recorder) == [("k", 10)]
    service.advance_watermark(20)  # inclusive: a timer at t fires at watermark t
    assert fired(recorder) == [("k", 10), ("k", 20)]
    assert service.current_watermark == 20
    assert service.event_timer_count() == 1


def test_registering_the_same_timer_twice_fires_once():
    service, backend, recorder, _ = make_service()
    register(service, backend, "k", 10)
    register(service, backend, "k", 10)
    assert service.event_timer_count() == 1
    service.advance_watermark(10)
    assert fired(recorder) == [("k", 10)]


def test_timers_are_per_key_and_per_namespace():
    service, backend, recorder, _ = make_service()
    register(service, backend, "a", 10)
    register(service, backend, "b", 10)
    register(service, backend, "a", 10, namespace="w1")
    register(service, backend, "a", 10, namespace="w2")
    register(service, backend, "a", 10, namespace="w2")
    assert service.event_timer_count() == 4
    backend.current_key = "a"
    service.delete_event_time_timer(10)  # a's default-namespace timer only
    service.advance_watermark(10)
    assert sorted((t.key, t.namespace) for _, t, _ in recorder.fired) == [("a", "w1"), ("a", "w2"), ("b", None)]


def test_deleted_timers_do_not_fire_and_can_be_registered_again():
    service, backend, recorder, _ = make_service()
    register(service, backend, "k", 10)
    register(service, backend, "k", 20)
    register(service, backend, "k", 30)
    service.delete_event_time_timer(20)
    service.delete_event_time_timer(999)  # unknown: harmless
    assert service.event_timer_count() == 2
    service.advance_watermark(25)
    assert fired(recorder) == [("k", 10)]
    service.delete_event_time_timer(30)
    register(service, backend, "k", 30)  # re-registered after deletion: fires once
    service.advance_watermark(100)
    assert fired(recorder) == [("k", 10), ("k", 30)]


def test_a_timer_that_fired_can_be_registered_again():
    service, backend, recorder, _ = make_service()
    register(service, backend, "k", 10)
    service.advance_watermark(10)
    register(service, backend, "k", 10)  # already due: fires at the next advance
    service.advance_watermark(11)
    assert fired(recorder) == [("k", 10), ("k", 10)]


def test_a_timer_registered_while_firing_fires_in_the_same_advance_when_due():
    service, backend, recorder, _ = make_service()
    register(service, backend, "k", 10)

    def chain(timer):
        if timer.timestamp == 10:
            service.register_event_time_timer(15)  # the fired timer's key is current
            service.register_event_time_timer(500)

    recorder.on_fire = chain
    service.advance_watermark(20)
    assert fired(recorder) == [("k", 10), ("k", 15)]
    assert service.event_timer_count() == 1


def test_a_timer_deleted_by_an_earlier_timer_in_the_same_advance_does_not_fire():
    service, backend, recorder, _ = make_service()
    register(service, backend, "k", 10)
    register(service, backend, "k", 20)
    recorder.on_fire = lambda timer: service.delete_event_time_timer(20) if timer.timestamp == 10 else None
    service.advance_watermark(30)
    assert fired(recorder) == [("k", 10)]


@pytest.mark.parametrize("bad", ["10", 10.5, None, True])
def test_a_timestamp_that_is_not_an_int_is_refused(bad):
    service, backend, _, _ = make_service()
    backend.current_key = "k"
    with pytest.raises(StateError, match="int of milliseconds"):
        service.register_event_time_timer(bad)
    with pytest.raises(StateError, match="int of milliseconds"):
        service.register_processing_time_timer(bad)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.integers(-50, 50), st.booleans()), max_size=40),
    st.lists(st.integers(-60, 60), max_size=5),
)
def test_fires_exactly_the_live_timers_in_order_like_a_sorted_set(operations, watermarks):
    """Model: a set of live (key, ts); register adds, delete removes; each advance fires the due ones, in
    timestamp order (the order among equal timestamps is not part of the contract)."""
    service, backend, recorder, _ = make_service()
    live: set[tuple[str, int]] = set()
    for key, ts, is_register in operations:
        backend.current_key = key
        if is_register:
            service.register_event_time_timer(ts)
            live.add((key, ts))
        else:
            service.delete_event_time_timer(ts)
            live.discard((key, ts))
    for watermark in sorted(watermarks) + [10**6]:
        due = {item for item in live if item[1] <= watermark}
        live -= due
        before = len(recorder.fired)
        service.advance_watermark(watermark)
        now_fired = fired(recorder)[before:]
        assert sorted(now_fired) == sorted(due)  # each due timer exactly once, nothing else
        assert [ts for _, ts in now_fired] == sorted(ts for _, ts in now_fired)
    assert service.event_timer_count() == 0


# -- processing time --------------------------------------------------------------------------------------------


def test_processing_timers_wake_up_at_the_earliest_and_fire_in_order():
    service, backend, recorder, clock = make_service(now=1000)
    register(service, backend, "a", 1300, processing=True)
    assert clock.pending_timestamps() == [1300]
    register(service, backend, "b", 1100, processing=True)  # earlier: a new wake-up
    register(service, backend, "c", 1200, processing=True)  # later than the scheduled one: none
    register(service, backend, "c", 1200, processing=True)  # duplicate
    assert clock.pending_timestamps() == [1100, 1300]
    clock.advance_to(1150)
    assert fired(recorder, "processing") == [("b", 1100)]
    assert clock.pending_timestamps() == [1200, 1300]  # re-armed for the next due timer
    clock.advance_to(5000)
    assert fired(recorder, "processing") == [("b", 1100), ("c", 1200), ("a", 1300)]
    assert all(timer.key == current for _, timer, current in recorder.fired)
    assert fired(recorder, "event") == []
    assert service.processing_timer_count() == 0


def test_deleted_processing_timers_do_not_fire():
    service, backend, recorder, clock = make_service(now=0)
    register(service, backend, "a", 50, processing=True)
    register(service, backend, "a", 60, processing=True)
    backend.current_key = "a"
    service.delete_processing_time_timer(50)
    clock.advance_to(100)
    assert fired(recorder, "processing") == [("a", 60)]


def test_event_and_processing_timers_are_separate():
    service, backend, recorder, clock = make_service(now=0)
    register(service, backend, "k", 10)
    register(service, backend, "k", 10, processing=True)
    service.advance_watermark(10)
    assert [kind for kind, _, _ in recorder.fired] == ["event"]
    clock.advance_to(10)
    assert [kind for kind, _, _ in recorder.fired] == ["event", "processing"]


def test_current_processing_time_reads_the_service():
    service, _, _, clock = make_service(now=1234)
    assert service.current_processing_time() == 1234
    clock.clock.set(2000)
    assert KeyedTimerService(service).current_processing_time() == 2000


def test_in_batch_mode_processing_time_stands_still_until_the_end_of_input():
    backend = FakeBackend()
    recorder = Recorder(backend)
    clock = ManualProcessingTime(ManualClock(1000))
    service = InternalTimerService(backend, recorder, clock, end_of_input_only=True)
    for now in (1000, 1001, 1500):  # two records of one key a moment apart: one timer, as in Flink
        clock.clock.set(now)
        register(service, backend, "a", service.current_processing_time() + 3_600_000, processing=True)
    assert service.processing_timer_count() == 1
    service.advance_watermark(MAX_WATERMARK)
    assert fired(recorder, "processing") == [("a", 3_601_000)]


# -- snapshot / restore -----------------------------------------------------------------------------------------


def test_snapshot_and_restore_into_a_fresh_service_fires_the_same_timers():
    service, backend, recorder, _ = make_service(now=0)
    for key, ts in [("a", 30), ("b", 10), ("a", 20), ("c", 20)]:
        register(service, backend, key, ts)
    register(service, backend, "a", 25, namespace="w")
    register(service, backend, "x", 70, processing=True)
    backend.current_key = "a"
    service.delete_event_time_timer(20)
    service.advance_watermark(10)  # b@10 fired before the snapshot
    snapshot = pickle.loads(pickle.dumps(service.snapshot()))
    assert sorted((t.key, t.timestamp) for t in snapshot["event"]) == [("a", 25), ("a", 30), ("c", 20)]
    assert [(t.key, t.timestamp) for t in snapshot["processing"]] == [("x", 70)]

    restored, backend2, recorder2, clock2 = make_service(now=0)
    restored.restore(snapshot)
    assert restored.event_timer_count() == 3 and restored.processing_timer_count() == 1
    assert clock2.pending_timestamps() == [70]  # restoring re-arms the processing-time wake-up
    backend2.current_key = "a"
    restored.register_event_time_timer(30)  # already restored: still one timer
    restored.advance_watermark(1000)
    assert fired(recorder2) == [("c", 20), ("a", 25), ("a", 30)]
    assert [t.namespace for _, t, _ in recorder2.fired] == [None, "w", None]
    clock2.advance_to(70)
    assert fired(recorder2, "processing") == [("x", 70)]
    # the original is unaffected by the restored copy
    service.advance_watermark(1000)
    assert fired(recorder) == [("b", 10), ("c", 20), ("a", 25), ("a", 30)]


def test_snapshot_keeps_the_order_of_equal_timestamps():
    service, backend, _, _ = make_service()
    for key in ["z", "a", "m"]:
        register(service, backend, key, 50)
    restored, _, recorder, _ = make_service()
    restored.restore(service.snapshot())
    restored.advance_watermark(50)
    assert fired(recorder) == [("z", 50), ("a", 50), ("m", 50)]


@dataclass(frozen=True)
class UnorderedKey:
    """Hashable, picklable, but not orderable: a legal key_by result."""

    name: str


def test_snapshot_works_for_keys_that_cannot_be_ordered():
    service, backend, _, _ = make_service()
    for key in [UnorderedKey("a"), UnorderedKey("b"), 1, "one", None, (1, None), (1, "x")]:
        register(service, backend, key, 100)  # same timestamp: only the key tells them apart
        register(service, backend, key, 100, processing=True)
    snapshot = service.snapshot()
    assert len(snapshot["event"]) == len(snapshot["processing"]) == 7
    restored, _, recorder, _ = make_service()
    restored.restore(snapshot)
    restored.advance_watermark(100)
    assert [t.key for _, t, _ in recorder.fired] == [
        UnorderedKey("a"),
        UnorderedKey("b"),
        1,
        "one",
        None,
        (1, None),
        (1, "x"),
    ]


def test_restore_is_random_order_insensitive():
    service, backend, _, _ = make_service()
    items = [(f"k{i}", random.Random(i).randint(0, 100)) for i in range(50)]
    for key, ts in items:
        register(service, backend, key, ts)
    snapshot = service.snapshot()
    snapshot["event"] = list(reversed(snapshot["event"]))
    restored, _, recorder, _ = make_service()
    restored.restore(snapshot)
    restored.advance_watermark(100)
    assert [ts for _, ts in fired(recorder)] == sorted(ts for _, ts in items)


# -- the user-facing services -----------------------------------------------------------------------------------


def test_keyed_timer_service_registers_for_the_current_key_in_the_default_namespace():
    service, backend, recorder, _ = make_service()
    keyed = KeyedTimerService(service)
    backend.current_key = "u1"
    keyed.register_event_time_timer(10)
    keyed.register_event_time_timer(20)
    keyed.delete_event_time_timer(20)
    assert keyed.current_watermark() == MIN_WATERMARK
    service.advance_watermark(50)
    assert [(t.key, t.timestamp, t.namespace) for _, t, _ in recorder.fired] == [("u1", 10, None)]
    assert keyed.current_watermark() == 50


def test_non_keyed_timer_service_refuses_timers_naming_the_operator_and_the_fix():
    clock = ManualProcessingTime(ManualClock(77))
    service = NonKeyedTimerService(clock, lambda: 5, "My Process")
    assert service.current_processing_time() == 77 and service.current_watermark() == 5
    for method in (
        service.register_event_time_timer,
        service.register_processing_time_timer,
        service.delete_event_time_timer,
        service.delete_processing_time_timer,
    ):
        with pytest.raises(StateError) as info:
            method(10)
        assert "'My Process'" in str(info.value) and "key_by" in str(info.value) and "keyed" in str(info.value)
