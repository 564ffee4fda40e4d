"""An interval join over the Nexmark source survives a failure exactly once: the generators' positions are
checkpointed with the join's keyed state, so a restored job neither loses nor repeats a joined row.

Job (parallelism 2, TaskManager processes, checkpoints every 100 ms): the `nexmark` table paced at 3000
events/s → each bid joined with its auction when made within 2 seconds of it (an IntervalJoin) → a Python UDF
that raises once, on the first attempt, at a bid half-way → an exactly-once FileSink. Oracle: the committed
lines equal the join computed in plain Python from the same generators' events, as a multiset.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter

import pytest

from bench.nexmark_queries import VIEWS, nexmark_ddl
from fluvial.common import Encoder
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream.connectors.file_sink import BasePathBucketAssigner
from fluvial.datastream.connectors.file_system import FileSink
from fluvial.datastream.connectors.nexmark.generator import AUCTION, BID, GeneratorSplit, NexmarkGenerator
from fluvial.table import DataTypes, StreamTableEnvironment
from fluvial.table.connectors.nexmark import nexmark_config
from fluvial.table.udf import ScalarFunction, udf
from fluvial.testing import ExecutionMode, environment, first_time
from fluvial.testing.oracle import committed_lines

EVENTS = 3000
OPTIONS = {
    "connector": "nexmark",
    "first-event.rate": "3000",
    "events.num": str(EVENTS),
    "base-time": "1704067200000",
    "max-emit-speed": "false",
}
QUERY = (
    "SELECT fail_once(B.auction, B.price), B.price, A.id, A.category FROM bid B JOIN auction A ON "
    "B.auction = A.id AND B.`dateTime` BETWEEN A.`dateTime` AND A.`dateTime` + INTERVAL '2' SECOND"
)


class FailOnce(ScalarFunction):
    """The auction id; on the first attempt (no marker file yet), the bid `price` raises once."""

    def __init__(self, marker: str, price: int) -> None:
        self.marker, self.price = marker, price

    def eval(self, auction, price):
        if price == self.price and first_time(self.marker):
            raise RuntimeError("injected failure half-way through the bids")
        return auction


def _expected() -> tuple[Counter, int]:
    """The join in plain Python over both generators' events, and a joined bid's price half-way."""
    config = nexmark_config({k: v for k, v in OPTIONS.items() if k not in ("connector", "max-emit-speed")})
    auctions, bids = {}, []
    for split in GeneratorSplit.split(config, 2):
        generator = NexmarkGenerator(split)
        while generator.has_next():
            for row in generator.next_rows(500):
                if row[0] == AUCTION:
                    auctions[row[2][0]] = row[2]
                elif row[0] == BID:
                    bids.append(row[3])
    lines = Counter()
    joined_prices = []
    for bid in bids:
        auction = auctions.get(bid[0])
        if auction is not None and auction[5] <= bid[3] <= auction[5] + _dt.timedelta(seconds=2):
            lines[f"{bid[0]},{bid[2]},{auction[0]},{auction[8]}"] += 1
            joined_prices.append(bid[2])
    return lines, joined_prices[len(joined_prices) // 2]


@pytest.mark.timeout(90)
def test_an_interval_join_over_nexmark_is_exactly_once_across_a_failure(tmp_path):
    expected, price = _expected()
    assert sum(expected.values()) > 100
    env = environment(ExecutionMode.PROCESSES)
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 100))
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(nexmark_ddl(OPTIONS))
    for view in VIEWS:
        t_env.execute_sql(view)
    marker = tmp_path / "failed"
    t_env.create_temporary_function("fail_once", udf(FailOnce(str(marker), price), result_type=DataTypes.BIGINT()))
    out = tmp_path / "out"
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BasePathBucketAssigner())
        .build()
    )
    joined = t_env.to_data_stream(t_env.sql_query(QUERY))
    joined.map(lambda r: f"{r[0]},{r[1]},{r[2]},{r[3]}").sink_to(sink)
    env.execute("nexmark interval join exactly once")

    assert marker.exists(), "the injected failure did not happen"
    lines, _ = committed_lines(out)
    assert Counter(lines) == expected
