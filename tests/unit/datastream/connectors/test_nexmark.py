"""The Nexmark generator and source: the reference's proportions, ids and times, parallel splits, and a
checkpointed position that resumes with the very next event."""

from __future__ import annotations

import datetime as _dt
import pickle

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.datastream.connectors.nexmark import NexmarkConfig, NexmarkSource, event_time
from fluvial.datastream.connectors.nexmark.generator import AUCTION, BID, PERSON, GeneratorSplit, NexmarkGenerator
from fluvial.datastream.connectors.source import Boundedness
from fluvial.table.connectors.nexmark import nexmark_config
from fluvial.table.errors import ValidationException

BASE = 1_704_067_200_000
CONFIG = NexmarkConfig(first_event_rate=1000, events_num=5000, base_time=BASE)


def _events(config: NexmarkConfig = CONFIG, parallelism: int = 1) -> list[list]:
    out = []
    for split in GeneratorSplit.split(config, parallelism):
        generator = NexmarkGenerator(split)
        rows = []
        while generator.has_next():
            rows.extend(generator.next_rows(333))
        out.append(rows)
    return out


def test_kinds_come_in_the_reference_proportion_and_ids_count_up() -> None:
    (rows,) = _events()
    kinds = [r[0] for r in rows]
    assert (kinds.count(PERSON), kinds.count(AUCTION), kinds.count(BID)) == (100, 300, 4600)
    assert kinds[:5] == [PERSON, AUCTION, AUCTION, AUCTION, BID]
    assert [r[1][0] for r in rows if r[0] == PERSON][:3] == [1000, 1001, 1002]
    assert [r[2][0] for r in rows if r[0] == AUCTION][:4] == [1000, 1001, 1002, 1003]
    categories = {r[2][8] for r in rows if r[0] == AUCTION}
    assert categories == {10, 11, 12, 13, 14}


def test_event_times_follow_the_rate_and_bids_refer_to_existing_or_leading_ids() -> None:
    (rows,) = _events()
    times = [event_time(r) for r in rows]
    assert times[0] == BASE and times[1000] == BASE + 1000  # 1000 events per second
    assert times == sorted(times)  # out-of-order group size 1: in order
    last_person = last_auction = 999
    hot_bids = 0
    for r in rows:
        if r[0] == PERSON:
            last_person = r[1][0]
        elif r[0] == AUCTION:
            last_auction = r[2][0]
            assert r[2][6] > r[2][5]  # expires after it starts
            assert r[2][4] >= r[2][3]  # reserve >= initial bid
        else:
            auction, bidder, price = r[3][0], r[3][1], r[3][2]
            assert 1000 <= auction <= last_auction + 10 and 1000 <= bidder <= last_person + 10
            assert 100 <= price <= 100_000_000
            hot_bids += (auction - 1000) % 100 == 0
    assert hot_bids > len(rows) * 0.4  # hot auctions: about half the bids (bid.hot-ratio.auctions 2)


def test_out_of_order_groups_shuffle_times_within_a_group() -> None:
    (rows,) = _events(NexmarkConfig(first_event_rate=1000, events_num=1000, base_time=BASE, out_of_order_group_size=10))
    times = [event_time(r) for r in rows]
    assert times != sorted(times)
    assert all(sorted(times[i : i + 10]) == list(range(BASE + i, BASE + i + 10)) for i in range(0, 1000, 10))


def test_splits_divide_the_ids_and_run_parallel_timelines() -> None:
    first, second = _events(parallelism=2)
    assert len(first) == len(second) == 2500
    assert event_time(first[0]) == event_time(second[0]) == BASE
    assert event_time(first[500]) == BASE + 1000  # each split at half the overall rate
    assert second[0][0] == PERSON and second[0][1][0] == 1000 + 2500 // 50  # its ids continue split 0's


def test_a_restored_reader_continues_with_the_next_event() -> None:
    source = NexmarkSource(CONFIG)
    assert source.get_boundedness() is Boundedness.BOUNDED
    reader = source.create_reader(None)
    reader.add_splits(source.create_splits(1))
    head = list(reader.poll(1234))
    snapshot = pickle.loads(pickle.dumps(reader.snapshot_state()))
    rest = []
    while (batch := reader.poll(1000)) is not None:
        rest.extend(batch)
    restored = source.create_reader(None)
    restored.add_splits(snapshot)
    again = []
    while (batch := restored.poll(700)) is not None:
        again.extend(batch)
    assert len(head) + len(rest) == 5000
    assert again == rest


def test_bad_settings_are_refused_in_one_sentence() -> None:
    with pytest.raises(InvalidJobError, match="proportion"):
        NexmarkSource(NexmarkConfig(bid_proportion=0))
    with pytest.raises(ValidationException, match="next-event.rate"):
        nexmark_config({"first-event.rate": "10", "next-event.rate": "20"})
    with pytest.raises(ValidationException, match="Unsupported options found for 'nexmark': rate.shape"):
        nexmark_config({"rate.shape": "SINE"})
    with pytest.raises(ValidationException, match="bid.avg-size"):
        nexmark_config({"bid.avg-size": "lots"})
    assert nexmark_config({"person.avg-size": "1kb", "base-time": "5"}).person_avg_size == 1024


def test_values_are_sql_timestamps() -> None:
    (rows,) = _events(NexmarkConfig(events_num=2, base_time=BASE))
    assert rows[0][1][6] == _dt.datetime(2024, 1, 1)
