"""Broadcast state in real jobs, in every execution mode: broadcast records reach every parallel subtask, keyed
data meets them whatever the arrival order, BATCH mode processes the broadcast side first, and a savepoint
restored at another parallelism gives every subtask the same broadcast state."""

from __future__ import annotations

import os

import pytest

from fluvial.common import Configuration, Types
from fluvial.datastream import BroadcastProcessFunction, KeyedBroadcastProcessFunction, RuntimeExecutionMode
from fluvial.datastream.state import ListStateDescriptor, MapStateDescriptor
from fluvial.testing import Pause, ScriptedSource, environment, execution_modes, wait_until

RATES = MapStateDescriptor("rates", Types.STRING(), Types.FLOAT())
WAITING = ListStateDescriptor("waiting", Types.PICKLED_BYTE_ARRAY())


class Convert(KeyedBroadcastProcessFunction):
    """Payments (currency, amount) converted at their currency's broadcast rate; a payment that arrives before
    its rate waits in keyed state and is converted by the broadcast side when the rate arrives."""

    def open(self, runtime_context):
        self.waiting = runtime_context.get_list_state(WAITING)

    def process_element(self, value, ctx):
        rate = ctx.get_broadcast_state(RATES).get(ctx.get_current_key())
        if rate is None:
            self.waiting.add(value)
        else:
            yield (value[0], value[1] * rate)

    def process_broadcast_element(self, value, ctx):
        currency, rate = value
        ctx.get_broadcast_state(RATES).put(currency, rate)
        converted = []

        def release(key, waiting):
            if key == currency:
                converted.extend((payment[0], payment[1] * rate) for payment in waiting.get())
                waiting.clear()

        ctx.apply_to_keyed_state(WAITING, release)
        yield from converted


PAYMENTS = [(currency, amount) for amount in range(1, 41) for currency in ("EUR", "GBP", "JPY", "CHF")]
RATES_IN = [("EUR", 2.0), ("GBP", 3.0), ("JPY", 0.5), ("CHF", 4.0)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_keyed_data_meets_every_broadcast_rate_whatever_the_order(mode):
    env = environment(mode)
    env.set_parallelism(3)
    rates = env.from_collection(RATES_IN).broadcast(RATES)
    converted = env.from_collection(PAYMENTS).key_by(lambda p: p[0]).connect(rates).process(Convert())
    expected = sorted((c, a * dict(RATES_IN)[c]) for c, a in PAYMENTS)
    assert sorted(converted.execute_and_collect()) == expected


class Label(BroadcastProcessFunction):
    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()

    def process_element(self, value, ctx):
        yield (self.subtask, value, sorted(ctx.get_broadcast_state(RATES).keys()))

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RATES).put(value[0], value[1])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_batch_mode_processes_the_broadcast_side_first(mode):
    env = environment(mode)
    env.set_parallelism(2)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    rates = env.from_collection(RATES_IN).broadcast(RATES)
    labelled = list(env.from_collection(list(range(20))).connect(rates).process(Label()).execute_and_collect())
    assert sorted(value for _, value, _ in labelled) == list(range(20))
    assert {subtask for subtask, _, _ in labelled} == {0, 1}
    assert all(keys == sorted(c for c, _ in RATES_IN) for _, _, keys in labelled)


class RememberRates(BroadcastProcessFunction):
    """Labels data with the subtask and the rates it knows; touches `<marks>/<subtask>` once it holds every rate."""

    def __init__(self, marks: str) -> None:
        self.marks = marks

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()

    def process_element(self, value, ctx):
        yield (self.subtask, value, sorted(ctx.get_broadcast_state(RATES).items()))

    def process_broadcast_element(self, value, ctx):
        state = ctx.get_broadcast_state(RATES)
        state.put(value[0], value[1])
        if len(list(state.keys())) == len(RATES_IN):
            open(os.path.join(self.marks, str(self.subtask)), "w").close()


def rates_job(mode, tmp_path, parallelism: int, savepoint: str | None = None):
    configuration = Configuration()
    if savepoint is not None:
        configuration.set_string("execution.savepoint.path", savepoint)
    env = environment(mode, configuration)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(3_600_000)  # savepoints need checkpointing; no periodic checkpoint interferes
    rates = env.from_source(ScriptedSource(RATES_IN, unbounded=True)).uid("rates").broadcast(RATES)
    data = env.from_source(ScriptedSource([Pause(str(tmp_path / "go")), *range(30)], unbounded=True)).uid("data")
    return data.connect(rates).process(RememberRates(str(tmp_path / "marks"))).uid("labels")


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode", execution_modes())
def test_a_savepoint_restored_at_another_parallelism_gives_every_subtask_the_broadcast_state(mode, tmp_path):
    (tmp_path / "marks").mkdir()
    stream = rates_job(mode, tmp_path, 2)
    stream.print()
    client = stream.get_execution_environment().execute_async("broadcast run 1")
    wait_until(lambda: sorted(os.listdir(tmp_path / "marks")) == ["0", "1"], what="both subtasks to hold every rate")
    savepoint = client.trigger_savepoint(str(tmp_path / "savepoints")).result(timeout=30)
    client.cancel()
    open(tmp_path / "go", "w").close()
    for name in os.listdir(tmp_path / "marks"):
        os.remove(tmp_path / "marks" / name)
    labelled = rates_job(mode, tmp_path, 3, savepoint).execute_and_collect(limit=30)
    assert sorted(value for _, value, _ in labelled) == list(range(30))
    assert {subtask for subtask, _, _ in labelled} == {0, 1, 2}
    assert all(rates == sorted(RATES_IN) for _, _, rates in labelled)
    assert os.listdir(tmp_path / "marks") == []  # no rate came again: the state was restored, not rebuilt
