"""The contexts the window operator hands to assigners, triggers, evictors and process window functions.
Each is one object per operator, repointed at the current window before use (no allocation per record)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import StateError
from fluvial.datastream.state import StateKind
from fluvial.datastream.window_assigners import WindowAssignerContext
from fluvial.datastream.window_evictors import EvictorContext
from fluvial.datastream.window_functions import KeyedStateStore, ProcessWindowFunction
from fluvial.datastream.window_triggers import OnMergeContext
from fluvial.runtime.operators.window_state import NamespacedStateStore

if TYPE_CHECKING:
    from fluvial.runtime.operators.window import WindowOperator


class AssignerContext(WindowAssignerContext):
    def __init__(self, operator: WindowOperator) -> None:
        self._operator = operator

    def get_current_processing_time(self) -> int:
        return self._operator.timers.current_processing_time()

    def get_runtime_context(self) -> Any:
        return self._operator.runtime_context


class WindowTriggerContext(OnMergeContext):
    """Bound to the current key (the backend's) and `window`; timers carry the window as their namespace."""

    def __init__(self, operator: WindowOperator, store: NamespacedStateStore) -> None:
        self._operator = operator
        self._timers = operator.timers
        self._store = store
        self.window: Any = None
        self.merged_windows: Iterable[Any] = ()

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._timers.register_processing_time_timer(time, self.window)

    def register_event_time_timer(self, time: int) -> None:
        self._timers.register_event_time_timer(time, self.window)

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete_processing_time_timer(time, self.window)

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete_event_time_timer(time, self.window)

    def get_partitioned_state(self, state_descriptor: Any) -> Any:
        self._store.namespace = self.window
        return self._store.get_state(state_descriptor)

    def get_metric_group(self) -> Any:
        """The window operator's metric group: a trigger's metrics are reported with the operator's."""
        return self._operator.runtime_context.get_metrics_group()

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        kind = state_descriptor.kind
        if kind is StateKind.REDUCING:
            function = state_descriptor.get_reduce_function()
            merge = getattr(function, "reduce", function)
        elif kind is StateKind.AGGREGATING:
            merge = state_descriptor.get_agg_function().merge
        elif kind is StateKind.LIST:

            def merge(a: list[Any], b: list[Any]) -> list[Any]:
                return a + b
        else:
            raise StateError(
                f"trigger state '{state_descriptor.name}' is {kind.value} state, which cannot be merged: "
                "use reducing, aggregating or list state in triggers of merging windows"
            )
        self._store.merge_namespaces(state_descriptor.name, self.window, self.merged_windows, merge)


class WindowEvictorContext(EvictorContext):
    def __init__(self, operator: WindowOperator) -> None:
        self._timers = operator.timers

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark


class _StateStoreView(KeyedStateStore):
    def __init__(self, get_state: Any) -> None:
        self._get = get_state

    def get_state(self, state_descriptor: Any) -> Any:
        return self._get(state_descriptor)

    get_list_state = get_state
    get_map_state = get_state
    get_reducing_state = get_state
    get_aggregating_state = get_state


class ProcessWindowContext(ProcessWindowFunction.Context[Any]):
    """`context` of ProcessWindowFunction / ProcessAllWindowFunction: the window, the clocks and state."""

    def __init__(self, operator: WindowOperator, window_store: NamespacedStateStore) -> None:
        self._timers = operator.timers
        self.current_window: Any = None

        def window_state(descriptor: Any) -> Any:
            window_store.namespace = self.current_window
            return window_store.get_state(descriptor)

        self._window_state = _StateStoreView(window_state)
        self._global_state = _StateStoreView(operator.keyed_backend.get_state)

    def window(self) -> Any:
        return self.current_window

    def current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._timers.current_watermark

    def window_state(self) -> KeyedStateStore:
        return self._window_state

    def global_state(self) -> KeyedStateStore:
        return self._global_state
