"""Translates a logical plan into DataStream transformations (Flink's ExecNode → Transformation step).

Each node becomes the DataStream operators that run it: Calc a flat_map of compiled code, Aggregate a keyed
process function over keyed state, WindowAggregate a keyed event-time window with an aggregate function,
Union a union, Limit a keyed counter, Deduplicate a keyed first/last row. Nothing here runs anything: the
result is a DataStream in the table environment's StreamExecutionEnvironment.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.table.errors import TableException, ValidationException
from fluvial.table.planner.aggregate_phases import (
    GlobalGroupAggregate,
    LocalGroupAggregate,
    MiniBatchAssigner,
    physical_node,
)
from fluvial.table.planner.async_scalar import AsyncScalarOptions, translate_async_calc
from fluvial.table.planner.distinct_split import DistinctBucket, split_distinct
from fluvial.table.planner.interval_join import IntervalJoin
from fluvial.table.planner.logical import (
    Aggregate,
    Calc,
    ChangelogNormalize,
    Correlate,
    Deduplicate,
    Join,
    Limit,
    OverAggregate,
    RelNode,
    Scan,
    TableAggregate,
    TemporalSort,
    TopN,
    Union,
    Values,
    WindowAggregate,
    WindowKind,
    WindowTableFunction,
)
from fluvial.table.planner.lookup_join import LookupJoin
from fluvial.table.planner.partition_pruning import prune_partitions
from fluvial.table.planner.temporal_join import TemporalJoin
from fluvial.table.planner.upsert_materialize import SinkMaterializer
from fluvial.table.planner.window_join import WindowAssign, WindowJoin
from fluvial.table.runtime.async_calc import has_async_call
from fluvial.table.runtime.functions import (
    CalcFunction,
    CorrelateFunction,
    DeduplicateFunction,
    GroupAggFunction,
    LimitFunction,
    RowKeySelector,
    ToRowFunction,
)
from fluvial.table.runtime.mini_batch import GlobalGroupAggFunction, LocalGroupAggFunction, MiniBatchGroupAggFunction
from fluvial.table.runtime.pandas_calc import has_pandas_call
from fluvial.table.runtime.windows import (
    CumulativeEventTimeWindows,
    CumulativeProcessingTimeWindows,
    RowtimeAssigner,
    SqlWatermarkSupplier,
    WindowAggAccumulate,
    WindowAggResult,
)

__all__ = ["Translator"]


class Translator:
    """One job's translation: a node reached twice (a table used by two sinks) is translated once."""

    def __init__(
        self,
        env: Any,
        state_ttl_millis: int = 0,
        batch: bool = False,
        mini_batch: Any = None,
        async_scalar: AsyncScalarOptions | None = None,
        distinct_buckets: int | None = None,
    ) -> None:
        self.env = env
        self.async_scalar = async_scalar or AsyncScalarOptions()
        self.state_ttl_millis = state_ttl_millis
        self.batch = batch
        self.mini_batch = None if batch else mini_batch  # as in Flink, a batch job ignores mini-batch
        self.distinct_buckets = None if batch else distinct_buckets  # split DISTINCT aggregates (streaming only)
        self._done: dict[int, tuple[RelNode, Any]] = {}  # the node is kept so its id is never reused

    def physical(self, node: RelNode) -> RelNode:
        """`node` as it runs (`aggregate_phases.physical_node`, `distinct_split`); `explain` shows these."""
        if self.distinct_buckets is not None:
            split = split_distinct(physical_node(node, None), self.distinct_buckets)
            if split is not None:
                return physical_node(split, self.mini_batch)
        return physical_node(node, self.mini_batch)

    def translate(self, node: RelNode) -> Any:
        key = id(node)
        if key not in self._done:
            self._done[key] = (node, self._translate(self.physical(node)))
        return self._done[key][1]

    def _translate(self, node: RelNode) -> Any:
        if isinstance(node, Scan):
            return self._scan(node)
        if isinstance(node, Values):
            stream = self.env.from_collection(list(node.rows))
            return stream.map(ToRowFunction(node.names, atomic=False)).name("Values").set_parallelism(1)
        if isinstance(node, Calc):
            pruned = prune_partitions(node)
            if pruned is not None:
                node = replace(node, input=pruned)
            rexes = [*(node.projections or ()), node.condition]
            if has_async_call(rexes):
                if has_pandas_call(rexes):
                    raise ValidationException(
                        "a projection or filter calls both an async scalar function and a pandas udf: compute one "
                        "of them in a subquery (or an earlier select) so each runs in its own Calc"
                    )
                stream = self.translate(node.input)
                width = len(node.input.schema)
                return translate_async_calc(
                    stream, node.names, width, node.projections, node.condition, self.async_scalar
                ).name(node.explain_terms())
            if has_pandas_call(rexes):
                from fluvial.table.runtime.pandas_calc import PandasCalcFunction

                vectorized = PandasCalcFunction(node.names, len(node.input.schema), node.projections, node.condition)
                return self.translate(node.input).flat_map(vectorized).name(node.explain_terms())
            return (
                self.translate(node.input)
                .flat_map(CalcFunction(node.names, node.projections, node.condition))
                .name(node.explain_terms())
            )
        if isinstance(node, Aggregate):
            keyed = self.translate(node.input).key_by(RowKeySelector(node.group))
            if node.mini_batch is not None:
                return self._bundle(
                    keyed,
                    MiniBatchGroupAggFunction(node.names, len(node.group), node.aggs, self.state_ttl_millis),
                    node,
                )
            return keyed.process(
                GroupAggFunction(
                    node.names, len(node.group), node.aggs, True, self.state_ttl_millis, final_only=self.batch
                )
            ).name(node.explain_terms())
        if isinstance(node, MiniBatchAssigner):
            return self.translate(node.input)
        if isinstance(node, LocalGroupAggregate):
            local = LocalGroupAggFunction(node.names, len(node.group), node.aggs)
            return self._bundle(self.translate(node.input), local, node, RowKeySelector(node.group))
        if isinstance(node, GlobalGroupAggregate):
            keyed = self.translate(node.input).key_by(RowKeySelector(range(node.key_count)))
            merge = GlobalGroupAggFunction(node.names, node.key_count, node.aggs, self.state_ttl_millis)
            return self._bundle(keyed, merge, node)
        if isinstance(node, WindowAggregate):
            return self._window(node)
        if isinstance(node, WindowTableFunction):
            from fluvial.common.time import Time
            from fluvial.datastream.window import EventTimeSessionWindows, ProcessingTimeSessionWindows
            from fluvial.table.runtime.windows import WindowRowsResult

            session = ProcessingTimeSessionWindows if _proctime(node.input, node.window.time_index) else None
            assigner = (session or EventTimeSessionWindows).with_gap(Time.milliseconds(node.window.size))
            keyed = self.translate(node.input).key_by(RowKeySelector(node.window.partition))
            return keyed.window(assigner).process(WindowRowsResult(node.names)).name(node.explain_terms())
        if isinstance(node, Correlate):
            function = CorrelateFunction(
                node.names,
                node.function,
                node.operands,
                node.keep_input,
                len(node.schema) - (len(node.input.schema) if node.keep_input else 0),
                node.left_outer,
                node.condition,
                node.input.names,
            )
            return self.translate(node.input).flat_map(function).name(node.explain_terms())
        if isinstance(node, WindowAssign):
            from fluvial.table.runtime.window_join import WindowAssignFunction

            assign = WindowAssignFunction(node.names, node.window)
            return self.translate(node.input).flat_map(assign).name(node.explain_terms())
        if isinstance(node, WindowJoin):
            from fluvial.table.runtime.window_join import WindowJoinFunction

            connected = self._keyed_pair(node)
            widths = (len(node.left.schema), len(node.right.schema))
            ends = (node.left_window[1], node.right_window[1])
            window_join = WindowJoinFunction(node.names, widths, ends, node.join_type, node.condition)
            return connected.process(window_join).name(node.explain_terms())
        if isinstance(node, TemporalJoin):
            from fluvial.table.runtime.temporal_join import TemporalJoinFunction

            connected = self._keyed_pair(node)
            widths = (len(node.left.schema), len(node.right.schema))
            temporal = TemporalJoinFunction(
                node.names,
                widths,
                (node.left_time, node.right_time),
                node.left_keys,
                node.join_type,
                node.condition,
                self.state_ttl_millis,
            )
            return connected.process(temporal).name(node.explain_terms())
        if isinstance(node, IntervalJoin):
            from fluvial.table.runtime.interval_join import IntervalJoinFunction

            connected = self._keyed_pair(node)
            widths = (len(node.left.schema), len(node.right.schema))
            interval_join = IntervalJoinFunction(
                node.names,
                widths,
                (node.left_time, node.right_time),
                (node.lower, node.upper),
                node.join_type,
                node.condition,
                node.proctime,
            )
            return connected.process(interval_join).name(node.explain_terms())
        if isinstance(node, Join):
            from fluvial.table.runtime.join import JoinFunction

            connected = self._keyed_pair(node)
            return connected.process(
                JoinFunction(
                    node.names,
                    len(node.left.schema),
                    len(node.right.schema),
                    node.join_type,
                    node.condition,
                    self.state_ttl_millis,
                )
            ).name(node.explain_terms())
        if isinstance(node, LookupJoin):
            return self._lookup_join(node)
        if isinstance(node, TableAggregate):
            from fluvial.table.runtime.table_aggregate import TableAggFunction

            keyed = self.translate(node.input).key_by(RowKeySelector(node.group))
            table_agg = TableAggFunction(node.names, len(node.group), node.args, node.function)
            return keyed.process(table_agg).name(node.explain_terms())
        if isinstance(node, TemporalSort):
            from fluvial.table.runtime.sort import TemporalSortFunction

            keyed = self.translate(node.input).key_by(RowKeySelector(()))
            sort = TemporalSortFunction(node.rowtime, node.fields, _proctime(node.input, node.rowtime))
            return keyed.process(sort).name(node.explain_terms())
        if isinstance(node, Union):
            first, *others = [self.translate(c) for c in node.children]
            return first.union(*others) if others else first
        if isinstance(node, Limit):
            keyed = self.translate(node.input).key_by(RowKeySelector(()))
            return keyed.process(LimitFunction(node.offset, node.fetch)).name(node.explain_terms())
        if isinstance(node, OverAggregate):
            from fluvial.table.runtime.windows import OverAggFunction

            keyed = self.translate(node.input).key_by(RowKeySelector(node.keys))
            proctime = _proctime(node.input, node.rowtime)
            if node.preceding is not None:
                from fluvial.table.runtime.over import BoundedOverAggFunction

                bounded = BoundedOverAggFunction(
                    node.names, node.rowtime, node.rows_frame, node.preceding, node.aggs, proctime
                )
                return keyed.process(bounded).name(node.explain_terms())
            return keyed.process(OverAggFunction(node.names, node.rowtime, node.rows_frame, node.aggs, proctime)).name(
                node.explain_terms()
            )
        if isinstance(node, TopN):
            from fluvial.table.runtime.functions import TopNFunction
            from fluvial.table.runtime.rank import RetractableTopNFunction

            keyed = self.translate(node.input).key_by(RowKeySelector(node.keys))
            top_n = RetractableTopNFunction if node.retract else TopNFunction
            return keyed.process(
                top_n(node.names, node.sort, node.limit, node.rank_output, self.state_ttl_millis)
            ).name(node.explain_terms())
        if isinstance(node, ChangelogNormalize):
            from fluvial.table.runtime.changelog_normalize import ChangelogNormalizeFunction

            keyed = self.translate(node.input).key_by(RowKeySelector(node.keys))
            normalize = ChangelogNormalizeFunction(node.names, self.state_ttl_millis)
            return keyed.process(normalize).name(node.explain_terms())
        if isinstance(node, DistinctBucket):
            from fluvial.table.runtime.distinct_bucket import DistinctBucketFunction

            bucket = DistinctBucketFunction(node.names, node.column, node.buckets)
            return self.translate(node.input).map(bucket).name(node.explain_terms())
        if isinstance(node, SinkMaterializer):
            from fluvial.table.planner.upsert_materialize import ConflictStrategy
            from fluvial.table.runtime.conflict_materializer import WatermarkCompactingMaterializeFunction
            from fluvial.table.runtime.sink_materializer import SinkUpsertMaterializeFunction

            keyed = self.translate(node.input).key_by(RowKeySelector(node.pk))
            materialize: Any
            if node.conflict in (ConflictStrategy.ERROR, ConflictStrategy.NOTHING):
                error = node.conflict is ConflictStrategy.ERROR
                materialize = WatermarkCompactingMaterializeFunction(
                    node.names, node.pk, node.table, error, node.upsert_key, self.state_ttl_millis
                )
            else:
                materialize = SinkUpsertMaterializeFunction(node.names, node.upsert_key, self.state_ttl_millis)
            return keyed.process(materialize).name(node.explain_terms())
        if isinstance(node, Deduplicate):
            keyed = self.translate(node.input).key_by(RowKeySelector(node.keys))
            dedup = DeduplicateFunction(node.keep_last, self.state_ttl_millis, node.rowtime, node.proctime)
            return keyed.process(dedup).name(node.explain_terms())
        raise TableException(f"no translation for {type(node).__name__}")

    def _keyed_pair(self, node: Join) -> Any:
        """A join's two inputs connected and keyed by their equalities' columns."""
        left, right = self.translate(node.left), self.translate(node.right)
        return left.connect(right).key_by(RowKeySelector(node.left_keys), RowKeySelector(node.right_keys))

    def _bundle(self, stream: Any, function: Any, node: Any, bundle_key: Any = None) -> Any:
        """A mini-batch operator (`MapBundleSpec`) running `function`; keyed when `stream` is a KeyedStream."""
        from fluvial.datastream.transformations import MapBundleSpec

        key_selector = stream._key()
        batch = node.mini_batch
        spec = MapBundleSpec(
            function,
            key_selector,
            bundle_key=bundle_key or key_selector,
            max_size=batch.size,
            latency_millis=batch.latency_millis,
        )
        return stream._one_input(node.explain_terms(), spec).name(node.explain_terms())

    def _lookup_join(self, node: LookupJoin) -> Any:
        from fluvial.table.connectors.base import ConnectorContext, lookup_factory
        from fluvial.table.runtime.lookup_join import LookupJoinFunction

        table = node.source
        options = dict(table.options)
        context = ConnectorContext(table.table_name, table.columns, options, table.primary_key)
        lookup = lookup_factory(options, table.table_name).create_lookup(context, node.lookup_keys)
        function = LookupJoinFunction(
            node.names, lookup, node.input_keys, node.lookup_width, node.join_type == "LEFT", node.condition
        )
        return self.translate(node.input).flat_map(function).name(node.explain_terms())

    def _scan(self, node: Scan) -> Any:
        stream = node.source.create_stream(self.env)
        if node.computed:
            stream = stream.flat_map(CalcFunction(node.names, node.computed, None)).name(
                f"Calc(select=[{', '.join(node.names)}])"
            )
        if node.watermark is not None:
            strategy = WatermarkStrategy.for_generator(
                SqlWatermarkSupplier(node.watermark.expression, self.env.get_config().get_auto_watermark_interval())
            ).with_timestamp_assigner(RowtimeAssigner(node.watermark.rowtime))
            stream = stream.assign_timestamps_and_watermarks(strategy).name(
                f"WatermarkAssigner(rowtime=[{node.names[node.watermark.rowtime]}], watermark=[{node.watermark.text}])"
            )
        return stream

    def _window(self, node: WindowAggregate) -> Any:
        from fluvial.common.time import Time
        from fluvial.datastream import window as w

        spec = node.window
        size, slide, offset = (
            Time.milliseconds(spec.size),
            Time.milliseconds(spec.slide),
            Time.milliseconds(spec.offset),
        )
        proctime = _proctime(node.input, spec.time_index)  # then the operator's clock and processing-time timers
        if spec.kind is WindowKind.TUMBLE:
            tumbling = w.TumblingProcessingTimeWindows if proctime else w.TumblingEventTimeWindows
            assigner: Any = tumbling.of(size, offset)
        elif spec.kind is WindowKind.HOP:
            sliding = w.SlidingProcessingTimeWindows if proctime else w.SlidingEventTimeWindows
            assigner = sliding.of(size, slide, offset)
        elif spec.kind is WindowKind.CUMULATE:
            cumulative = CumulativeProcessingTimeWindows if proctime else CumulativeEventTimeWindows
            assigner = cumulative(spec.size, spec.slide, spec.offset)
        else:
            session = w.ProcessingTimeSessionWindows if proctime else w.EventTimeSessionWindows
            assigner = session.with_gap(size)
        if spec.kind is not WindowKind.SESSION and not proctime and _after_join(node.input):
            from fluvial.table.runtime.rowtime_windows import RowtimeWindowAssigner

            assigner = RowtimeWindowAssigner(assigner, spec.time_index)
        keyed = self.translate(node.input).key_by(RowKeySelector(node.group))
        return (
            keyed.window(assigner)
            .aggregate(WindowAggAccumulate(node.aggs), WindowAggResult(node.names, len(node.group)))
            .name(node.explain_terms())
        )


def _proctime(node: RelNode, index: int) -> bool:
    """Whether column `index` of `node` is a processing-time attribute (`PROCTIME()`): its windows and OVER frames
    then run on the operator's clock and processing-time timers."""
    return node.schema[index].type.time_attribute == "PROCTIME"


def _after_join(node: RelNode) -> bool:
    """Whether rows reach `node` through a join (their record timestamps may not be their rowtime)."""
    while not isinstance(node, (Scan, Join)) and len(node.inputs) == 1:
        node = node.inputs[0]
    return isinstance(node, Join)
