"""The broadcast state operator on fluvial.testing's OperatorHarness: the data side reads the broadcast state
and cannot change it, the broadcast side writes it and visits keyed state, timers and side outputs, watermarks
of both inputs, BATCH mode's broadcast-first order, and snapshots restored at another parallelism giving every
subtask the same broadcast state."""

from __future__ import annotations

import pytest

from fluvial.common import Types
from fluvial.common.errors import StateError
from fluvial.datastream import BroadcastProcessFunction, KeyedBroadcastProcessFunction, OutputTag
from fluvial.datastream.state import ListStateDescriptor, MapStateDescriptor
from fluvial.testing import OperatorHarness

RULES = MapStateDescriptor("rules", Types.STRING(), Types.STRING())
LIMITS = MapStateDescriptor("limits", Types.STRING(), Types.INT())
UNDECLARED = MapStateDescriptor("undeclared", Types.STRING(), Types.STRING())
REJECTED = OutputTag("rejected")


class Suffix(BroadcastProcessFunction):
    """Data records get the current suffix rule; rules are "key=value" records."""

    def process_element(self, value, ctx):
        suffix = ctx.get_broadcast_state(RULES).get("suffix")
        if suffix is None:
            yield REJECTED, value
        else:
            yield f"{value}{suffix}"

    def process_broadcast_element(self, value, ctx):
        key, _, rule = value.partition("=")
        rules = ctx.get_broadcast_state(RULES)
        if rule:
            rules.put(key, rule)
        else:
            rules.remove(key)
        yield f"rule {value} at {ctx.timestamp()}"


def suffix_harness(**options) -> OperatorHarness:
    return OperatorHarness.of_two_inputs(
        lambda data, rules: data.connect(rules.broadcast(RULES, LIMITS)).process(Suffix()), **options
    )


def test_the_data_side_reads_what_the_broadcast_side_wrote():
    harness = suffix_harness().open()
    harness.process_element1("a", timestamp=1)
    harness.process_element2("suffix=!", timestamp=2)
    harness.process_element1("b", timestamp=3)
    harness.process_element2("suffix=", timestamp=4)
    harness.process_element1("c", timestamp=5)
    assert [(r.value, r.timestamp) for r in harness.output()] == [
        ("rule suffix=! at 2", 2),
        ("b!", 3),
        ("rule suffix= at 4", 4),
    ]
    assert [(r.value, r.timestamp) for r in harness.side_output(REJECTED)] == [("a", 1), ("c", 5)]


class Meddler(BroadcastProcessFunction):
    def __init__(self, descriptor, side):
        self.descriptor, self.side = descriptor, side

    def process_element(self, value, ctx):
        if self.side == "data":
            ctx.get_broadcast_state(self.descriptor).put("x", value)

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(self.descriptor).put("x", value)


@pytest.mark.parametrize(
    "descriptor, side, message",
    [
        (RULES, "data", "read-only on the data side"),
        (UNDECLARED, "broadcast", "'undeclared' was not declared.*'rules'"),
    ],
)
def test_writing_from_the_data_side_or_an_undeclared_state_is_refused(descriptor, side, message):
    harness = OperatorHarness.of_two_inputs(
        lambda data, rules: data.connect(rules.broadcast(RULES)).process(Meddler(descriptor, side))
    ).open()
    with pytest.raises(StateError, match=message):
        (harness.process_element1 if side == "data" else harness.process_element2)("v")


class Thresholds(KeyedBroadcastProcessFunction):
    """Keeps each key's values; a broadcast "reset" clears every key's values (apply_to_keyed_state) and reports
    what it cleared; a data record above the key's broadcast limit sets an event-time timer at its timestamp."""

    SEEN = ListStateDescriptor("seen", Types.INT())

    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(self.SEEN)

    def process_element(self, value, ctx):
        key, amount = value
        self.seen.add(amount)
        limit = ctx.get_broadcast_state(LIMITS).get(key)
        if limit is not None and amount > limit:
            ctx.timer_service().register_event_time_timer(ctx.timestamp())
        yield (ctx.get_current_key(), sorted(self.seen.get()))

    def process_broadcast_element(self, value, ctx):
        if value == "reset":
            cleared = []
            ctx.apply_to_keyed_state(
                self.SEEN, lambda key, state: (cleared.append((key, sorted(state.get()))), state.clear())
            )
            yield ("cleared", sorted(cleared))
        elif value == "peek":
            self.seen.get()  # no key on the broadcast side
        else:
            key, limit = value
            ctx.get_broadcast_state(LIMITS).put(key, limit)

    def on_timer(self, timestamp, ctx):
        key = ctx.get_current_key()
        yield ("over limit", key, timestamp, ctx.get_broadcast_state(LIMITS).get(key), ctx.time_domain().name)


def thresholds_harness(**options) -> OperatorHarness:
    return OperatorHarness.of_two_inputs(
        lambda data, limits: data.key_by(lambda v: v[0]).connect(limits.broadcast(LIMITS)).process(Thresholds()),
        **options,
    )


def test_keyed_state_timers_and_apply_to_keyed_state():
    harness = thresholds_harness().open()
    harness.process_element2(("a", 5))
    harness.process_elements([("a", 3), ("b", 9), ("a", 7)], [10, 20, 30], input=1)
    assert harness.take_values() == [("a", [3]), ("b", [9]), ("a", [3, 7])]
    harness.process_watermark(40, input=1)
    assert harness.take_values() == []  # the combined clock waits for the broadcast input
    harness.process_watermark(100, input=2)
    assert harness.take_values() == [("over limit", "a", 30, 5, "EVENT_TIME")]  # b has no limit: no timer
    assert harness.watermarks() == [40]
    harness.process_element2("reset")
    assert harness.take_values() == [("cleared", [("a", [3, 7]), ("b", [9])])]
    assert harness.keyed_state_entries() == {}
    with pytest.raises(StateError, match="outside a keyed context"):
        harness.process_element2("peek")


def test_broadcast_state_survives_a_restore_at_another_parallelism_on_every_subtask():
    old = [suffix_harness(parallelism=2, subtask_index=i).open() for i in range(2)]
    for harness in old:
        harness.process_element2("suffix=?")
        harness.process_element2("suffix=!")
    snapshots = [harness.snapshot(checkpoint_id=7) for harness in old]
    for parallelism in (1, 3):
        for index in range(parallelism):
            restored = suffix_harness(parallelism=parallelism, subtask_index=index).open(restore=snapshots)
            restored.process_element1("x")
            assert restored.values() == ["x!"], (parallelism, index)


def test_keyed_broadcast_state_and_keyed_state_restore_together():
    harness = thresholds_harness().open()
    harness.process_element2(("a", 1))
    harness.process_elements([("a", 2)], [10], input=1)
    restored = thresholds_harness().open(restore=[harness.snapshot()])
    restored.process_watermark(50, input=1).process_watermark(50, input=2)
    assert restored.take_values() == [("over limit", "a", 10, 1, "EVENT_TIME")]  # timer and limit came back
    restored.process_elements([("a", 4)], [60], input=1)
    assert restored.take_values() == [("a", [2, 4])]


def test_in_batch_mode_data_waits_until_the_broadcast_input_ends():
    harness = suffix_harness(batch=True).open()
    harness.process_element1("a")
    harness.process_element2("suffix=!")
    assert harness.take_values() == ["rule suffix=! at None"]
    harness.process_final_watermark(input=2)
    assert harness.take_values() == ["a!"]
    harness.process_element1("b")
    assert harness.take_values() == ["b!"]


def test_in_batch_mode_finish_releases_data_that_still_waits():
    harness = suffix_harness(batch=True).open()
    harness.process_element1("a")
    harness.end_input()
    assert harness.side_output(REJECTED)[0].value == "a"


class CountInBroadcastState:
    """A CheckpointedFunction keeping a broadcast map in its operator state store."""

    STATE = MapStateDescriptor("seen", Types.STRING(), Types.INT())

    def initialize_state(self, context):
        self.state = context.get_operator_state_store().get_broadcast_state(self.STATE)

    def snapshot_state(self, context):
        pass

    def map(self, value):
        self.state.put(value, (self.state.get(value) or 0) + 1)
        return (value, self.state.get(value))


def test_a_checkpointed_functions_broadcast_state_is_copied_to_every_subtask():
    old = [
        OperatorHarness.of(lambda s: s.map(CountInBroadcastState()), parallelism=2, subtask_index=i).open()
        for i in range(2)
    ]
    for harness in old:
        harness.process_elements(["x", "x"])
    snapshots = [harness.snapshot() for harness in old]
    for index in range(3):
        restored = OperatorHarness.of(
            lambda s: s.map(CountInBroadcastState()), parallelism=3, subtask_index=index
        ).open(restore=snapshots)
        restored.process_element("x")
        assert restored.values() == [("x", 3)]
