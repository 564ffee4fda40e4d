"""Word count: the "hello world" of stream processing, over a text file bundled with the examples.

    python examples/word_count.py [FILE]        # or: fluvial run examples/word_count.py [FILE]

Reads the file with a FileSource, splits each line into lowercase words, keys the stream by word and keeps a
running count per word with `reduce`. A streaming reduce emits every intermediate count ("river", 1), ("river",
2), ...; the collected stream is therefore folded into the final count per word here, on the client.
"""

import re
import sys
from pathlib import Path

from fluvial.common import Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.file_system import FileSource, StreamFormat

DEFAULT_INPUT = Path(__file__).resolve().parent / "data" / "words.txt"
WORD = re.compile(r"[a-z]+")


def split_words(line: str):
    """One line → its lowercase words; every run of non-letters separates two words."""
    return WORD.findall(line.lower())


def main(path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(path)).build()
    counts = (
        env.from_source(source, source_name="words.txt")
        .flat_map(split_words, output_type=Types.STRING())
        .name("Split Words")
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .name("Pair With One")
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .name("Count Per Word")
    )

    final: dict[str, int] = {}
    with counts.execute_and_collect("word count") as results:
        for word, count in results:
            # The updates of one word come from one subtask in order, but take the max to be plain about it.
            final[word] = max(count, final.get(word, 0))

    top = sorted(final.items(), key=lambda item: (-item[1], item[0]))[:10]
    width = max(len(word) for word, _ in top)
    print(f"Top {len(top)} words in {path.name}:")
    print(f"  {'rank':>4}  {'word':<{width}}  {'count':>5}")
    for rank, (word, count) in enumerate(top, start=1):
        print(f"  {rank:>4}  {word:<{width}}  {count:>5}")
    print(f"total: {sum(final.values())} words, {len(final)} distinct")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_INPUT)
