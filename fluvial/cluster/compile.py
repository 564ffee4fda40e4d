"""The one compile step every PipelineExecutor takes: a Pipeline to its StreamGraph and JobGraph.

The environment asks for a plan through here too (`get_stream_graph()`, `get_job_graph()`), importing this
module inside the function that asks, as `execute()` imports the executor: the API never imports the compiler
(`fluvial.graph`) itself (DESIGN section 1, STYLE rule 1), and what it shows is what the executors submit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fluvial.graph.job_graph import build_job_graph
from fluvial.graph.translate import stream_graph_of

if TYPE_CHECKING:
    from fluvial.datastream.pipeline import Pipeline
    from fluvial.graph.job_graph import JobGraph
    from fluvial.graph.stream_graph import StreamGraph


def stream_graph(pipeline: Pipeline) -> StreamGraph:
    """The StreamGraph of `pipeline` (Flink's StreamGraphGenerator)."""
    return stream_graph_of(pipeline)


def job_graph(pipeline: Pipeline) -> JobGraph:
    """The JobGraph of `pipeline`: its StreamGraph with operators chained (Flink's StreamingJobGraphGenerator)."""
    return build_job_graph(stream_graph_of(pipeline))
