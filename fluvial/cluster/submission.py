"""Where `execute()` lands: compile the StreamGraph to a JobGraph and run it on the target cluster.

`execution.target` chooses the cluster; the embedded MiniCluster is the default.
"""

from __future__ import annotations

import os
from typing import Any

from fluvial.cluster.job_client import JobClient
from fluvial.cluster.mini_cluster import CollectBuffer, MiniCluster
from fluvial.common.errors import ConfigurationError
from fluvial.graph.job_graph import build_job_graph
from fluvial.graph.stream_graph import StreamGraph


def _cluster_for(graph: StreamGraph) -> MiniCluster:
    target = graph.configuration.get("execution.target") if graph.configuration is not None else "local"
    if target not in ("local", "embedded"):
        raise ConfigurationError(f"execution.target '{target}' is not available in this version; use 'local'")
    return MiniCluster(graph.configuration)


def submit_job(graph: StreamGraph, cluster: MiniCluster | None = None) -> JobClient:
    job_graph = build_job_graph(graph)
    return (cluster or _cluster_for(graph)).submit(job_graph)


class CloseableIterator:
    """The records of `execute_and_collect`, in arrival order. Also a context manager: leaving it (or
    `close()`) cancels a job that is still running. A job failure is raised from `next()`."""

    def __init__(self, client: JobClient, buffer: CollectBuffer) -> None:
        self._client = client
        self._buffer = buffer
        self._pending: list = []
        self._position = 0
        self._done = False

    def __iter__(self) -> "CloseableIterator":
        return self

    def __next__(self) -> Any:
        while self._position >= len(self._pending):
            if self._done:
                raise StopIteration
            item = self._buffer.queue.get()
            if item is CollectBuffer.END:
                self._done = True
                self._raise_failure()
                raise StopIteration
            self._pending, self._position = item, 0
        value = self._pending[self._position]
        self._position += 1
        return value

    def _raise_failure(self) -> None:
        result = self._client.get_job_execution_result()
        if result.exception() is not None and not self._buffer.closed.is_set():
            raise result.exception()

    def close(self) -> None:
        if not self._buffer.closed.is_set():
            self._buffer.closed.set()
            if not self._client.get_job_execution_result().done():
                self._client.cancel()
        self._done = True
        self._pending, self._position = [], 0  # a closed iterator yields nothing more

    def __enter__(self) -> "CloseableIterator":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def collect_results(env: Any, stream: Any, job_name: str | None, limit: int | None) -> Any:
    collect_id = os.urandom(16).hex()
    env._add_collect_sink(stream, collect_id)
    graph = env.get_stream_graph(job_name, clear_transformations=True)
    cluster = _cluster_for(graph)
    cluster.collect_target(collect_id)
    client = env._submit(graph, lambda stream_graph: submit_job(stream_graph, cluster))
    iterator = CloseableIterator(client, cluster.collect_buffers[collect_id])
    if limit is None:
        return iterator
    with iterator:
        results = []
        for value in iterator:
            results.append(value)
            if len(results) >= limit:
                break
        return results
