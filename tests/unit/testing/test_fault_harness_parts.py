"""The fault harness's parts on their own: the per-key sequence source, the verifying operator (snapshot and
restore through the real path), and the oracle, which must count what it is for — lost, duplicated and
out-of-order records — when they are there."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.testing import OperatorHarness
from fluvial.testing.oracle import verify_sequences
from fluvial.testing.sequences import KeySequenceSource, SequenceVerifier


def read_all(source: KeySequenceSource, parallelism: int, cut: int | None = None) -> list[tuple[int, int]]:
    """Every record of every split; with `cut`, each reader is snapshotted after `cut` records and a fresh
    reader restored from the snapshot reads the rest."""
    records = []
    for split in source.create_splits(parallelism):
        reader = source.create_reader(None)
        reader.add_splits([split])
        if cut is not None:
            records.extend(reader.poll(cut) or [])
            state = reader.snapshot_state()
            reader = source.create_reader(None)
            reader.add_splits(state)
        while (batch := reader.poll(7)) is not None:
            records.extend(batch)
    return records


@settings(max_examples=40, deadline=None)
@given(keys=st.integers(1, 9), per_key=st.integers(1, 12), parallelism=st.integers(1, 4), cut=st.integers(0, 30))
def test_every_key_gets_every_sequence_number_once_and_in_order_across_a_restore(keys, per_key, parallelism, cut):
    records = read_all(KeySequenceSource(keys, per_key), parallelism, cut)
    assert sorted(records) == [(k, s) for k in range(keys) for s in range(per_key)]
    for key in range(keys):
        assert [s for k, s in records if k == key] == list(range(per_key))


def test_a_paced_source_never_blocks_and_emits_at_its_rate():
    reader = KeySequenceSource(2, 1000, records_per_second=100).create_reader(None)
    reader.add_splits(KeySequenceSource(2, 1000).create_splits(1))
    assert len(reader.poll(1000)) <= 1
    assert reader.poll(1000) == [], "the budget is used up: an empty poll, not a wait"


def verifier() -> OperatorHarness:
    return OperatorHarness.of(lambda stream: stream.key_by(lambda r: r[0]).process(SequenceVerifier()))


def test_the_verifier_judges_duplicates_and_gaps_and_rewinds_with_its_state():
    harness = verifier().open()
    for record in [(1, 0), (1, 1), (2, 0), (1, 1), (2, 2)]:
        harness.process_element(record)
    assert harness.values() == ["1|0|ok", "1|1|ok", "2|0|ok", "1|1|duplicated", "2|2|out-of-order"]
    snapshot = harness.snapshot(checkpoint_id=1)
    restored = verifier().open(restore=[snapshot])
    restored.process_element((1, 2))
    restored.process_element((2, 3))
    assert restored.values() == ["1|2|ok", "2|3|ok"]


def write(directory, name: str, lines: list[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("".join(f"{line}\n" for line in lines))


@pytest.mark.parametrize(
    "case, expected",
    [
        ("clean", (0, 0, 0)),
        ("lost", (2, 0, 0)),
        ("committed twice", (0, 1, 0)),
        ("state did not rewind", (0, 1, 0)),
        ("out of order", (1, 0, 1)),
    ],
)
def test_the_oracle_counts_what_went_wrong(tmp_path, case, expected):
    lines = [f"{k}|{s}|ok" for k in range(2) for s in range(3)]
    if case == "lost":
        lines = lines[:-2]
    elif case == "committed twice":
        write(tmp_path, "part-again", ["0|1|ok"])
    elif case == "state did not rewind":
        lines[1] = "0|1|duplicated"
    elif case == "out of order":
        lines = [line for line in lines if line != "1|1|ok"]
        lines[-1] = "1|2|out-of-order"
    write(tmp_path, "part-0", lines)
    write(tmp_path, ".part-1.inprogress", ["0|0|ok"])  # uncommitted: never counted
    report = verify_sequences(tmp_path, 2, 3)
    assert (report.lost, report.duplicated, report.out_of_order) == expected
    assert report.hidden_files == 1 and report.exactly_once is (expected == (0, 0, 0))
