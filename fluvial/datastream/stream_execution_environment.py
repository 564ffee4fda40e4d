"""StreamExecutionEnvironment (PyFlink's): the registry of a job's transformations and the door to running it.

Repeated `execute()` runs only the sinks added since the previous one, as in Flink. `execute()` compiles the
StreamGraph here and hands it to `fluvial.cluster` — imported inside the submitting functions only, the one
place the API reaches up the layers (DESIGN section 1).
"""

from __future__ import annotations

import contextvars
import os
from typing import Any, Callable, Iterable

from fluvial.common.configuration import Configuration, check_buffer_timeout
from fluvial.common.errors import InvalidJobError
from fluvial.common.execution_config import ExecutionConfig
from fluvial.datastream import transformations as t
from fluvial.datastream.data_stream import DataStream

# Every submission passes through this hook when set: `interceptor(stream_graph, submit)` either calls
# `submit(stream_graph)` (returning its JobClient) or raises. The CLI uses it to count jobs (`run`) and to
# capture a plan without running it (`plan`).
execution_interceptor: contextvars.ContextVar[Callable[[Any, Callable[[Any], Any]], Any] | None] = (
    contextvars.ContextVar("execution_interceptor", default=None)
)

# The configuration a launcher gives every environment the job creates (Flink's context environment): `fluvial run
# -p 4 -D key=value -s PATH` sets it. An environment starts from it; the job's own Configuration, passed to
# `get_execution_environment(config)` or `configure(config)`, and its setters override it, as in Flink.
context_configuration: contextvars.ContextVar[Configuration | None] = contextvars.ContextVar(
    "context_configuration", default=None
)


class StreamExecutionEnvironment:
    def __init__(self, configuration: Configuration | None = None) -> None:
        self._configuration = Configuration()
        self._config = ExecutionConfig()
        self._chaining_enabled = True
        self._checkpoint_config: Any = None
        self._state_backend: Any = None
        self._restart_strategy: Any = None
        self._transformations: dict[int, t.Transformation] = {}
        self._pending_sinks: list[int] = []
        self._next_id = 1
        for layer in (context_configuration.get(), configuration):
            if layer is not None:
                self.configure(layer)

    @staticmethod
    def get_execution_environment(configuration: Configuration | None = None) -> "StreamExecutionEnvironment":
        return StreamExecutionEnvironment(configuration)

    # -- job-wide settings --------------------------------------------------------------------------------------

    def get_config(self) -> ExecutionConfig:
        return self._config

    def get_configuration(self) -> Configuration:
        return self._configuration

    def configure(self, configuration: Configuration) -> None:
        """Take every key `configuration` sets; the job-wide ones among them (parallelism, max parallelism,
        watermark interval, chaining) apply at once, overriding earlier settings, as Flink's `configure` does.
        Keys it does not set keep their values."""
        configuration.validate()
        self._configuration.add_all(configuration)
        keys = configuration.key_set()
        if "parallelism.default" in keys:
            self._config.set_parallelism(configuration.get("parallelism.default"))
        if "pipeline.max-parallelism" in keys:
            self._config.set_max_parallelism(configuration.get("pipeline.max-parallelism"))
        if "pipeline.auto-watermark-interval" in keys:
            self._config.set_auto_watermark_interval(configuration.get("pipeline.auto-watermark-interval"))
        if "pipeline.operator-chaining.enabled" in keys:
            self._chaining_enabled = bool(configuration.get("pipeline.operator-chaining.enabled"))
        if self._checkpoint_config is not None:
            self._checkpoint_config.configure(configuration)

    def set_parallelism(self, parallelism: int) -> "StreamExecutionEnvironment":
        self._config.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._config.get_parallelism() or os.cpu_count() or 1

    def set_max_parallelism(self, max_parallelism: int) -> "StreamExecutionEnvironment":
        self._config.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int | None:
        return self._config.get_max_parallelism()

    def disable_operator_chaining(self) -> "StreamExecutionEnvironment":
        self._chaining_enabled = False
        return self

    def is_chaining_enabled(self) -> bool:
        return self._chaining_enabled

    def set_buffer_timeout(self, timeout_millis: int) -> "StreamExecutionEnvironment":
        """Any bound >= 0 holds: batches go to their channels as soon as they are produced; -1 is refused."""
        check_buffer_timeout(timeout_millis)
        return self

    # -- fault tolerance ----------------------------------------------------------------------------------------

    def get_checkpoint_config(self) -> Any:
        if self._checkpoint_config is None:
            from fluvial.datastream.checkpoint_config import CheckpointConfig

            self._checkpoint_config = CheckpointConfig(self._configuration)
        return self._checkpoint_config

    def enable_checkpointing(self, interval: int, mode: Any = None) -> "StreamExecutionEnvironment":
        """Checkpoint every `interval` ms (>= 10), EXACTLY_ONCE unless `mode` says AT_LEAST_ONCE."""
        config = self.get_checkpoint_config()
        config.set_checkpoint_interval(interval)
        if mode is not None:
            config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_interval(self) -> int:
        return self.get_checkpoint_config().get_checkpoint_interval()

    def get_checkpointing_mode(self) -> Any:
        return self.get_checkpoint_config().get_checkpointing_mode()

    def set_state_backend(self, state_backend: Any) -> "StreamExecutionEnvironment":
        from fluvial.datastream.state_backend import StateBackend

        if not isinstance(state_backend, StateBackend):
            raise InvalidJobError(
                f"set_state_backend expects HashMapStateBackend() or EmbeddedRocksDBStateBackend(), got {state_backend!r}"
            )
        self._state_backend = state_backend
        return self

    def get_state_backend(self) -> Any:
        if self._state_backend is None:
            from fluvial.datastream.state_backend import state_backend_from_configuration

            return state_backend_from_configuration(self._configuration)
        return self._state_backend

    def set_restart_strategy(self, restart_strategy_configuration: Any) -> "StreamExecutionEnvironment":
        from fluvial.common.restart_strategy import RestartStrategyConfiguration

        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise InvalidJobError(
                "set_restart_strategy expects e.g. RestartStrategies.fixed_delay_restart(3, 1000), "
                f"got {restart_strategy_configuration!r}"
            )
        self._restart_strategy = restart_strategy_configuration
        return self

    def get_restart_strategy(self) -> Any:
        from fluvial.common.restart_strategy import resolve_restart_strategy

        enabled = self.get_checkpoint_config().is_checkpointing_enabled()
        return resolve_restart_strategy(self._restart_strategy, self._configuration, enabled)

    def _fault_tolerance(self) -> Any:
        """What the JobMaster needs about failures. A job that configured none of it loads none of it: start-up
        time is part of every small job's latency."""
        from fluvial.datastream.fault_tolerance import FaultTolerance

        keys = self._configuration.keys()
        checkpoints = None
        if self._checkpoint_config is not None or any(k.startswith(("execution.checkpointing", "state.")) for k in keys):
            checkpoints = self.get_checkpoint_config().settings()
        backend = self._state_backend
        if backend is None and "state.backend.type" in keys:
            backend = self.get_state_backend()
        return FaultTolerance(
            checkpoints=checkpoints,
            state_backend=backend,
            restart_strategy=self._restart_strategy,
            savepoint_path=self._configuration.get("execution.savepoint.path"),
            allow_non_restored_state=bool(self._configuration.get("execution.savepoint.ignore-unclaimed-state")),
            restart_configured=any(k.startswith("restart-strategy") for k in keys),
        )

    def set_stream_time_characteristic(self, characteristic: Any) -> "StreamExecutionEnvironment":
        """Flink 1.x: event time is always on since Flink 1.12; kept so old programs run unchanged."""
        return self

    # -- sources ------------------------------------------------------------------------------------------------

    def from_collection(self, collection: Iterable[Any], type_info: Any = None) -> DataStream:
        from fluvial.datastream.connectors.collection import CollectionSource

        elements = list(collection)
        tid = self._add_transformation(
            t.SourceTransformation,
            name="Source: Collection Source",
            operator=t.SourceSpec(CollectionSource(elements)),
            parallelism=1,
            parallelism_fixed=True,
            output_type=type_info,
        )
        return DataStream(self, tid)

    def from_source(
        self, source: Any, watermark_strategy: Any = None, source_name: str | None = None, type_info: Any = None
    ) -> DataStream:
        if not hasattr(source, "create_reader"):
            raise InvalidJobError(f"from_source expects a Source (e.g. NumberSequenceSource), got {source!r}")
        name = source_name or source.default_name()
        fixed = source.max_parallelism() == 1
        tid = self._add_transformation(
            t.SourceTransformation,
            name=f"Source: {name}",
            operator=t.SourceSpec(source, watermark_strategy=watermark_strategy),
            parallelism=1 if fixed else None,
            parallelism_fixed=fixed,
            output_type=type_info,
        )
        return DataStream(self, tid)

    def add_receiver(self, receiver: Any, name: str | None = None) -> DataStream:
        """A stream of what a push-source Receiver stores (Spark Streaming's receiver path; DESIGN 2.5)."""
        from fluvial.receiver.receiver import Receiver
        from fluvial.receiver.source import ReceiverSource

        if not isinstance(receiver, Receiver):
            raise InvalidJobError(f"add_receiver expects a fluvial.receiver.Receiver, got {receiver!r}")
        stream_id = self._next_id
        source = ReceiverSource(receiver, stream_id)
        tid = self._add_transformation(
            t.SourceTransformation,
            name=f"Source: {name or receiver.name()}",
            operator=t.SourceSpec(source),
            parallelism=1,
            parallelism_fixed=True,
        )
        return DataStream(self, tid)

    def socket_text_stream(self, host: str, port: int, delimiter: str = "\n", max_retries: int = 3) -> DataStream:
        """Lines read from a TCP socket; the stream ends when the peer closes the connection."""
        from fluvial.receiver.socket import SocketTextReceiver

        return self.add_receiver(SocketTextReceiver(host, port, delimiter, max_retries), f"Socket Stream {host}:{port}")

    def read_text_file(self, file_path: str, charset_name: str = "UTF-8") -> DataStream:
        from fluvial.datastream.connectors.file_system import FileSource, StreamFormat

        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(charset_name), file_path).build()
        return self.from_source(source, source_name=f"Text File: {file_path}")

    # -- plans --------------------------------------------------------------------------------------------------

    def get_stream_graph(self, job_name: str | None = None, clear_transformations: bool = False) -> Any:
        from fluvial.graph.translate import build_stream_graph

        if not self._pending_sinks:
            raise InvalidJobError(
                "No operators defined in streaming topology. Cannot execute: "
                "add a sink (print(), sink_to(...), add_sink(...)) before execute()"
            )
        graph = build_stream_graph(
            transformations=self._transformations,
            sink_ids=list(self._pending_sinks),
            job_name=job_name or self._configuration.get("pipeline.name") or "Flink Streaming Job",
            default_parallelism=self.get_parallelism(),
            default_max_parallelism=self._config.get_max_parallelism(),
            chaining_enabled=self._chaining_enabled,
            execution_config=self._config,
            configuration=self._configuration,
            fault_tolerance=self._fault_tolerance(),
        )
        if clear_transformations:
            self._pending_sinks.clear()
        return graph

    def get_job_graph(self, job_name: str | None = None) -> Any:
        from fluvial.graph.job_graph import build_job_graph

        return build_job_graph(self.get_stream_graph(job_name))

    def get_execution_plan(self) -> str:
        return self.get_stream_graph().to_execution_plan_json()

    # -- running ------------------------------------------------------------------------------------------------

    def execute(self, job_name: str | None = None) -> Any:
        """Run the job to its end and return a JobExecutionResult; a failure raises JobExecutionException
        whose `__cause__` is the user's exception."""
        return self.execute_async(job_name).get_job_execution_result().result()

    def execute_async(self, job_name: str | None = None) -> Any:
        from fluvial.cluster.submission import submit_job

        return self._submit(self.get_stream_graph(job_name, clear_transformations=True), submit_job)

    def _submit(self, graph: Any, submit: Callable[[Any], Any]) -> Any:
        """The one door every submission passes, so the execution interceptor sees them all."""
        interceptor = execution_interceptor.get()
        return submit(graph) if interceptor is None else interceptor(graph, submit)

    def _execute_and_collect(self, stream: DataStream, job_name: str | None, limit: int | None) -> Any:
        from fluvial.cluster.submission import collect_results

        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise InvalidJobError(f"execute_and_collect limit must be an integer >= 1, got {limit!r}")
        return collect_results(self, stream, job_name, limit)

    # -- the transformation registry ----------------------------------------------------------------------------

    def _add_transformation(self, kind: type[t.Transformation], **fields: Any) -> int:
        tid = self._next_id
        self._next_id += 1
        self._transformations[tid] = kind(id=tid, **fields)
        return tid

    def _transformation(self, tid: int) -> t.Transformation:
        return self._transformations[tid]

    def _replace_transformation(self, transformation: t.Transformation) -> None:
        self._transformations[transformation.id] = transformation

    def _add_collect_sink(self, stream: DataStream, collect_id: str) -> int:
        tid = self._add_transformation(
            t.SinkTransformation, name="Collect Sink", input_id=stream._id, operator=t.CollectSpec(collect_id=collect_id)
        )
        self._pending_sinks.append(tid)
        return tid

