"""The mini-batch operator (Flink's MapBundleOperator and KeyedMapBundleOperator), the runtime of
`MapBundleSpec`: SQL's mini-batch and local-global aggregation fold many records per key before touching
state or the network.

Records fold into an in-memory bundle, one entry per key (`function.add_input(entry, record)`); the bundle is
finished (`function.finish_bundle(bundle, context)`, which returns the records to emit) when:
1. it holds `max_size` records;
2. `latency_millis` have passed since its first record (a processing-time callback; one per bundle);
3. a watermark arrives (its output precedes the watermark, as in Flink);
4. a checkpoint barrier is about to be passed on (`prepare_snapshot_pre_barrier`): the bundle is never part of a
   checkpoint, so what it held is emitted before the barrier and covered by downstream state;
5. the input ends.
When keyed (`spec.key_selector` set), `context.set_current_key(key)` scopes keyed state to one key inside
`finish_bundle`.
"""

from __future__ import annotations

import logging
from typing import Any

from fluvial.runtime.operators.base import StreamOperator, explain_unhashable_key, key_function
from fluvial.runtime.records import RecordBatch, Watermark

logger = logging.getLogger(__name__)


class BundleContext:
    """What `finish_bundle` may use: the current key of keyed state (keyed bundles only)."""

    __slots__ = ("_backend",)

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def set_current_key(self, key: Any) -> None:
        self._backend.current_key = key

    def get_current_key(self) -> Any:
        return self._backend.current_key


class MapBundleOperator(StreamOperator):
    """See the module docstring. Per record: one key call, one dict get and set, one add_input call."""

    def open(self) -> None:
        super().open()
        spec: Any = self.spec
        self._bundle_key = key_function(spec.bundle_key if spec.bundle_key is not None else spec.key_selector)
        self._add = spec.function.add_input
        self._finish = spec.function.finish_bundle
        self._max_size: int = spec.max_size
        self._latency: int = spec.latency_millis
        self._bundle: dict[Any, Any] = {}
        self._count = 0
        self._deadline = 0  # when the current bundle must be finished (processing time)
        self._timer_pending = False
        self._context = BundleContext(self.keyed_backend)
        self._time = self.context.processing_time_service

    def process_batch(self, batch: RecordBatch) -> None:
        values = batch.values
        start, end = 0, len(values)
        while start < end:  # a bundle that fills inside this buffer is finished there; the rest starts a new one
            room = self._max_size - self._count
            part = values if start == 0 and end <= room else values[start : start + room]
            self._fold(part)
            start += len(part)

    def _fold(self, values: Any) -> None:
        bundle = self._bundle
        if not bundle:
            self._start_timer()
        add, key, get = self._add, self._bundle_key, bundle.get
        k = None
        try:
            for value in values:
                k = key(value)
                bundle[k] = add(get(k), value)
        except TypeError as error:
            explain_unhashable_key(error, k)
        self._count += len(values)
        if self._count >= self._max_size:
            self.finish_bundle()

    def _start_timer(self) -> None:
        """A new bundle's deadline; one latency callback is pending at a time (it re-arms itself for a bundle
        that started after the one it was set for)."""
        self._deadline = self._time.current_processing_time() + self._latency
        if not self._timer_pending:
            self._timer_pending = True
            self._time.register_timer(self._deadline, self._on_latency)

    def _on_latency(self, now: int) -> None:
        if self._bundle and now >= self._deadline:
            self.finish_bundle()
        if self._bundle:
            self._time.register_timer(self._deadline, self._on_latency)
        else:
            self._timer_pending = False

    def finish_bundle(self) -> None:
        """Hand the bundle to the function and emit what it returns; a new bundle starts empty."""
        bundle = self._bundle
        if not bundle:
            return
        self._bundle = {}
        self._count = 0
        out = self._finish(bundle, self._context)
        if out:
            self.output.collect(RecordBatch(out if isinstance(out, list) else list(out), None))

    def process_watermark(self, watermark: Watermark) -> None:
        self.finish_bundle()
        super().process_watermark(watermark)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.finish_bundle()

    def finish(self) -> None:
        self.finish_bundle()
