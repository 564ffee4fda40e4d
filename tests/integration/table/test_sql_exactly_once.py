"""A SQL GROUP BY survives a failure exactly once: its accumulators are keyed state, checkpointed and
restored like any operator's, and the replayed source rows are not counted twice.

Job: datagen ids 1..N (a sequence: the NumberSequenceSource offset is checkpointed) → a Python UDF that
tags each id with a key and raises once, on the first attempt, half-way → GROUP BY key (COUNT, SUM) → the
changelog as a DataStream → an exactly-once FileSink. Oracle over the committed files, per key: the +I/+U
rows count 1, 2, 3, ... without gap or repeat, the -U rows retract every one but the last, and the last
count and sum are the key's true totals.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from fluvial.common import Encoder
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream.connectors.file_sink import BasePathBucketAssigner
from fluvial.datastream.connectors.file_system import FileSink
from fluvial.table import DataTypes, StreamTableEnvironment
from fluvial.table.udf import ScalarFunction, udf
from fluvial.testing import ExecutionMode, environment, first_time
from fluvial.testing.oracle import committed_lines

N = 2000
KEYS = 5


class KeyOrFailOnce(ScalarFunction):
    """id → id % KEYS; on the first attempt (no marker file yet), id N/2 raises once."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def eval(self, id):
        if id == N // 2 and first_time(self.marker):
            raise RuntimeError("injected failure half-way through the ids")
        return id % KEYS


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode", [ExecutionMode.PROCESSES])
def test_group_by_counts_every_row_once_across_a_failure(tmp_path, mode):
    per_key = run_counts(tmp_path, mode, {})
    for key, changes in per_key.items():
        # part files hold each subtask's changes in order, but files are read in no particular order: compare
        # as sorted lists (a replayed row would repeat a count, a lost one leave a gap)
        accumulations = sorted(c[1:] for c in changes if c[0] in ("+I", "+U"))
        assert [c[0] for c in accumulations] == list(range(1, len(accumulations) + 1)), f"key {key}"
        retractions = sorted(c[1:] for c in changes if c[0] == "-U")
        assert retractions == accumulations[:-1], f"key {key}"
        expected = [i for i in range(1, N + 1) if i % KEYS == key]
        assert accumulations[-1] == (len(expected), sum(expected))


@pytest.mark.timeout(90)
def test_a_two_phase_mini_batch_group_by_counts_every_row_once_across_a_failure(tmp_path):
    """The batch is emitted before each barrier and is never state: the restored aggregate and the committed
    changes agree. A key's counts grow by a batch at a time: strictly increasing, each retracted by the next."""
    options = {
        "table.exec.mini-batch.enabled": "true",
        "table.exec.mini-batch.allow-latency": "50 ms",
        "table.exec.mini-batch.size": "64",
    }
    per_key = run_counts(tmp_path, ExecutionMode.THREADS, options)
    for key, changes in per_key.items():
        accumulations = sorted(c[1:] for c in changes if c[0] in ("+I", "+U"))
        counts = [c[0] for c in accumulations]
        assert counts == sorted(set(counts)) and len(counts) > 1, f"key {key}: a count repeats: {counts}"
        retractions = sorted(c[1:] for c in changes if c[0] == "-U")
        assert retractions == accumulations[:-1], f"key {key}"
        expected = [i for i in range(1, N + 1) if i % KEYS == key]
        assert accumulations[-1] == (len(expected), sum(expected))


def run_counts(tmp_path, mode: ExecutionMode, options: dict[str, str]) -> dict[int, list[tuple[str, int, int]]]:
    """Runs the job (see the module docstring) with the table `options`; each key's committed changes."""
    env = environment(mode)
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 100))
    t_env = StreamTableEnvironment.create(env)
    for key, value in options.items():
        t_env.get_config().set(key, value)
    t_env.execute_sql(f"""CREATE TABLE ids (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '3000',
        'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '{N}')""")
    t_env.create_temporary_function(
        "key_of", udf(KeyOrFailOnce(str(tmp_path / "failed")), result_type=DataTypes.BIGINT())
    )
    counts = t_env.sql_query("SELECT key_of(id) AS k, COUNT(*) AS c, SUM(id) AS s FROM ids GROUP BY key_of(id)")
    out = tmp_path / "out"
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BasePathBucketAssigner())
        .build()
    )
    t_env.to_changelog_stream(counts).map(lambda r: f"{r.get_row_kind().short_string()},{r[0]},{r[1]},{r[2]}").sink_to(
        sink
    )
    env.execute("sql exactly once")

    assert (tmp_path / "failed").exists(), "the injected failure did not happen"
    lines, _ = committed_lines(out)  # hidden files: the failed attempt's uncommitted parts
    per_key: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
    for line in lines:
        kind, key, count, total = line.split(",")
        per_key[int(key)].append((kind, int(count), int(total)))
    assert sorted(per_key) == list(range(KEYS))
    return per_key
