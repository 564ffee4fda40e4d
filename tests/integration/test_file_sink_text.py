"""FileSink with Encoder.simple_string_encoder() writes each record as PyFlink's does — the Java toString() of
the value a typed record becomes, the text print() shows — and an untyped record as str()."""

from __future__ import annotations

import pytest

from fluvial.common import Encoder, Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.file_sink import FileSink
from fluvial.testing.oracle import committed_lines


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "output_type, expected",
    [
        (Types.TUPLE([Types.STRING(), Types.INT()]), ["(while,999)", "(river,1)"]),
        (Types.ROW([Types.STRING(), Types.INT()]), ["+I[while, 999]", "+I[river, 1]"]),
        (None, ["('while', 999)", "('river', 1)"]),
    ],
    ids=["tuple", "row", "untyped"],
)
def test_file_sink_writes_records_as_print_shows_them(output_type, expected, tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = env.from_collection([("while", 999), ("river", 1)])
    if output_type is not None:
        stream = stream.map(lambda pair: pair, output_type=output_type)
    stream.sink_to(FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder()).build())
    env.execute("file sink text")
    assert sorted(committed_lines(tmp_path / "out")[0]) == sorted(expected)
