"""OperatorTask: a task that executes the application's OperatorSpec graph message by message.

At ``init`` the task gets the container's internal context (an
:class:`~samza_dagster.container.internal_context.InternalTaskContext`: the JobModel, the
producers, its last checkpoint, and typed hooks into its TaskInstance), installs decoders
(intermediate streams through the intermediate-message serde, inputs through their descriptors'
serdes) and its control-message handling, restores the control bookkeeping from the last
checkpoint, and compiles one chain of operator callables per input partition — so ``process`` is
one dict lookup and a call. (Side-input tables were filled by the container.)

End-of-stream and watermarks flow through the graph per operator: an operator has ended when
every partition of this task of the streams upstream of it has ended; its watermark is the
minimum over those partitions (ended ones no longer count). Windows flush, joins expire, and
partition_by sends ``EndOfStreamMessage`` / ``WatermarkMessage`` to every partition of its
intermediate stream, in Samza 1.8's form (no task count: each consumer counts the producer
tasks in the job model and the plan, as Samza 1.x does; ``task_count`` here only says whether
this job has producer tasks of the stream at all).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from samza_dagster.application.kv import KV
from samza_dagster.application.specs import (
    BatchMapOperatorSpec,
    FilterOperatorSpec,
    FlatMapOperatorSpec,
    InputOperatorSpec,
    JoinOperatorSpec,
    MapOperatorSpec,
    MergeOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    SinkOperatorSpec,
    StreamTableJoinOperatorSpec,
    WindowOperatorSpec,
)
from samza_dagster.config import keys
from samza_dagster.container.internal_context import InternalTaskContext
from samza_dagster.control.handler import ControlMessageHandler, IntermediateStreamDecoder
from samza_dagster.control.sender import ControlMessageSender
from samza_dagster.control.watermark import WATERMARK_NOT_EXIST
from samza_dagster.control.watermark_source import InputWatermarks
from samza_dagster.model import ColumnarEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.operators import impl
from samza_dagster.operators.analysis import store_name
from samza_dagster.operators.batch_map import BatchMap, TableOutput
from samza_dagster.operators.errors import OperatorError
from samza_dagster.operators.side_inputs import TableSideInputsProcessor
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.system.protocols import AppendsTables
from samza_dagster.task.context import TaskContext

_ENDED = 1 << 62  # watermark of an ended partition: it no longer holds others back


class _MessageDecoder:
    """Deserializes an input with its descriptor's serdes; a field the descriptor leaves
    unset keeps the configured serde (``prepare`` blanks the configured serde of every field
    a descriptor sets, so nothing is deserialized twice)."""

    __slots__ = ("key_serde", "msg_serde")

    def __init__(self, key_serde: Any, msg_serde: Any) -> None:
        self.key_serde = key_serde
        self.msg_serde = msg_serde

    def decode(self, envelope: Any) -> bool:
        if self.key_serde is not None and envelope.key is not None:
            envelope.key = self.key_serde.from_bytes(envelope.key)
        if self.msg_serde is not None and envelope.message is not None:
            envelope.message = self.msg_serde.from_bytes(envelope.message)
        return True


@runtime_checkable
class InitableFunction(Protocol):
    """A user function object of the high-level API with Samza's ``init(context)``."""

    def __call__(self, *args: Any) -> Any: ...

    def init(self, context: TaskContext) -> None: ...


class OperatorTask:
    """StreamTask + WindowableTask + InitableTask + EndOfStreamListenerTask over the graph."""

    def __init__(self, prepared: Any, task_name: str, factory: Any) -> None:
        self.prepared = prepared
        self.task_name = task_name
        self.factory = factory
        self.event_time: int | None = None
        self.routes: dict[SystemStreamPartition, Any] = {}
        self.windows: list[impl.WindowOperator] = []
        self.joins: list[impl.StreamStreamJoin] = []
        self.partition_bys: list[tuple[impl.PartitionBy, frozenset]] = []
        #: (operator, its upstream partitions in this task), in topological order
        self.timed: list[tuple[Any, frozenset]] = []
        self.ssp_watermarks: dict[SystemStreamPartition, int] = {}
        self.ended: set[SystemStreamPartition] = set()
        self.input_watermarks: InputWatermarks | None = None
        self.handler: ControlMessageHandler | None = None
        #: map_batches operators, upstream ones first (flushed in this order: ``_flush_batches``)
        self.batch_maps: list[BatchMap] = []
        #: the inputs this task takes as Arrow batches where their system reads columns (the
        #: container asks the consumer: ``TaskInstance.takes_columns``; a BatchOperatorTask's
        #: inputs into a map_batches), and their routes
        self.columnar_inputs: frozenset[SystemStream] = frozenset()
        self.columnar_routes: dict[SystemStreamPartition, Callable[[Any], None]] = {}

    # -- init ----------------------------------------------------------------------------------
    def init(self, context: TaskContext) -> None:
        if not isinstance(context, InternalTaskContext) or context.job_model is None:
            raise OperatorError(
                f"task {context.task_name!r}: the operator runtime runs inside a SamzaContainer (it needs the "
                "container's internal task context: the JobModel, the producers, hooks into its TaskInstance)"
            )
        ti = context.task_instance
        job_model = context.job_model
        prepared = self.prepared
        app = prepared.descriptor
        config = context.config
        self.collector = ti.collector
        self.coordinator = ti.coordinator
        self.sender = ControlMessageSender(self.task_name, context.producers)
        ssps = context.system_stream_partitions
        by_stream: dict[SystemStream, list[SystemStreamPartition]] = {}
        for ssp in ssps:
            by_stream.setdefault(ssp.system_stream, []).append(ssp)
        self.by_stream = by_stream
        stream_of_id = {sid: SystemStream(spec.system, spec.physical_name) for sid, spec in app.input_operators.items()}
        self.upstream_ssps = {
            op_id: frozenset(ssp for sid in sids for ssp in by_stream.get(stream_of_id[sid], ()))
            for op_id, sids in prepared.upstream.items()
        }
        self.ssp_watermarks = {ssp: WATERMARK_NOT_EXIST for ssp in ssps}

        # intermediate streams: decoder + control handler
        configured = SerdeRegistry(config)
        intermediate_ssps: list[SystemStreamPartition] = []
        for spec in app.input_operators.values():
            if spec.op_id not in prepared.op_ids:
                continue
            ss = stream_of_id[spec.stream_id]
            if spec.is_intermediate:
                key_serde, msg_serde = prepared.intermediate_serdes(spec.stream_id)
                ti.set_stream_decoder(ss, IntermediateStreamDecoder(key_serde, msg_serde, make_kv=KV))
                intermediate_ssps.extend(by_stream.get(ss, ()))
            elif spec.serde is not None or spec.key_serde is not None:
                ti.set_stream_decoder(
                    ss,
                    _MessageDecoder(
                        spec.key_serde if spec.key_serde is not None else configured.key_serde(ss),
                        spec.serde if spec.serde is not None else configured.msg_serde(ss),
                    ),
                )
        known_counts = prepared.producer_task_counts(job_model)
        self.handler = ControlMessageHandler(intermediate_ssps, known_counts, self._on_intermediate_watermark)
        # _on_partition_end: a partition ended (a bounded input's end, or a reconciled intermediate end)
        ti.install_control_handling(self.handler, self._on_partition_end)
        input_ssps = [ssp for ssp in ssps if ssp not in set(intermediate_ssps)]
        self.input_watermarks = InputWatermarks(input_ssps, keys.TASK_WATERMARK_ALLOWED_LATENESS_MS.get(config))
        self.counters = context.metrics.counters

        # compile the graph
        self._built: dict[int, Any] = {}
        self.context = context
        self.job_counts = prepared.own_producer_counts(job_model)
        for spec in app.input_operators.values():
            if spec.op_id not in prepared.op_ids:
                continue
            ss = stream_of_id[spec.stream_id]
            targets = [self._build(d, spec) for d in spec.registered_operator_specs]
            nxt = impl.fan_out(targets)
            watermarks = self.input_watermarks
            columnar = _columnar_route(targets) if ss in self.columnar_inputs else None
            for ssp in by_stream.get(ss, ()):
                self.routes[ssp] = self._input_route(ssp, spec, nxt, watermarks)
                if columnar is not None:
                    self.columnar_routes[ssp] = columnar
        order = {op.op_id: i for i, op in enumerate(prepared.order)}
        self.timed.sort(key=lambda pair: order.get(getattr(pair[0], "op_id", ""), 0))
        self.batch_maps.sort(key=lambda op: order.get(op.op_id, 0))

        # the checkpointed control bookkeeping (side-input tables were filled by the container)
        cp = context.last_checkpoint
        if cp is not None:
            ended, marks = self.handler.restore(cp.end_of_stream, cp.watermarks)
            for ssp, wm in marks:
                self.ssp_watermarks[ssp] = wm
            for ssp in ended:
                ti.mark_end_of_stream(ssp)
            if marks:
                self._watermarks_changed()

    def _input_route(
        self, ssp: SystemStreamPartition, spec: InputOperatorSpec, nxt: Any, watermarks: InputWatermarks
    ) -> Any:
        if spec.is_intermediate:
            return lambda env: nxt(env.message)
        max_seen = watermarks.max_event_time
        if spec.kv:

            def route_kv(env: Any) -> None:
                ts = env.event_time
                if ts is not None and ts > max_seen[ssp]:
                    max_seen[ssp] = ts
                nxt(KV(env.key, env.message))

            return route_kv

        def route(env: Any) -> None:
            ts = env.event_time
            if ts is not None and ts > max_seen[ssp]:
                max_seen[ssp] = ts
            nxt(env.message)

        return route

    def _build(self, spec: OperatorSpec, upstream: OperatorSpec) -> Any:
        if isinstance(spec, JoinOperatorSpec):
            join = self._built.get(id(spec))
            if join is None:
                nxt = self._downstream(spec)
                left = self.context.get_store(store_name(spec.op_id, "-L"))
                right = self.context.get_store(store_name(spec.op_id, "-R"))
                join = impl.StreamStreamJoin(self, spec, left, right, self.prepared.join_event_time, nxt, self.counters)
                self._built[id(spec)] = join
                self.joins.append(join)
                self.timed.append((join, self.upstream_ssps.get(spec.op_id, frozenset())))
            return join.left if upstream is spec.left_spec else join.right
        built = self._built.get(id(spec))
        if built is not None:
            return built
        built = self._make(spec)
        self._built[id(spec)] = built
        return built

    def _downstream(self, spec: OperatorSpec) -> Any:
        return impl.fan_out([self._build(d, spec) for d in spec.registered_operator_specs])

    def _initialised(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Samza's InitableFunction: a function object with ``init(context)`` gets the task's
        context before its first message — its metrics_registry, stores, config. Each task gets
        its own copy, as Samza deserializes the operator spec per task: a counter the function
        registers then counts that task's messages, not the container's."""
        if not isinstance(fn, InitableFunction):
            return fn
        own = copy.copy(fn)
        own.init(self.context)
        return own

    def _make(self, spec: OperatorSpec) -> Any:
        if isinstance(spec, MapOperatorSpec):
            return impl.map_op(self._initialised(spec.fn), self._downstream(spec))
        if isinstance(spec, FilterOperatorSpec):
            return impl.filter_op(self._initialised(spec.fn), self._downstream(spec))
        if isinstance(spec, BatchMapOperatorSpec):
            rows: list[Any] = []
            tables: list[TableOutput] = []
            for d in spec.registered_operator_specs:
                built = self._build(d, spec)
                whole = self._table_output(d)
                if whole is None:
                    rows.append(built)
                else:
                    tables.append(TableOutput(whole, built))
            fn = self._initialised(spec.fn)
            batch_map = BatchMap(spec.op_id, fn, spec.batch_format, impl.fan_out(rows) if rows else None, tables)
            self.batch_maps.append(batch_map)
            return batch_map
        if isinstance(spec, FlatMapOperatorSpec):
            return impl.flat_map_op(self._initialised(spec.fn), self._downstream(spec))
        if isinstance(spec, MergeOperatorSpec):
            return self._downstream(spec)
        if isinstance(spec, SinkOperatorSpec):
            sink = self._initialised(spec.fn)
            collector, coordinator = self.collector, self.coordinator
            return lambda m: sink(m, collector, coordinator)
        if isinstance(spec, OutputOperatorSpec):
            out = spec.output_stream
            return impl.SendToStream(
                self, SystemStream(out.system, out.physical_name), out.kv, out.key_serde, out.serde, self.collector.send
            )
        if isinstance(spec, PartitionByOperatorSpec):
            out = spec.output_stream
            key_serde, msg_serde = self.prepared.intermediate_serdes(out.stream_id)
            ss = SystemStream(out.system, out.physical_name)
            op = impl.PartitionBy(
                self,
                ss,
                self.prepared.partitions(out.stream_id),
                spec.key_fn,
                spec.value_fn,
                key_serde,
                msg_serde,
                self.sender.producers[out.system],
                self.task_name,
                spec.op_id,
            )
            op.task_count = self.job_counts.get(ss, 0)
            upstream = self.upstream_ssps.get(spec.op_id, frozenset())
            self.partition_bys.append((op, upstream))
            self.timed.append((op, upstream))
            return op
        if isinstance(spec, StreamTableJoinOperatorSpec):
            fn = self._initialised(spec.fn)
            store = self.context.get_store(store_name("table-" + spec.table_spec.table_id))
            return impl.StreamTableJoin(store, fn, spec.key_fn, self._downstream(spec))
        if isinstance(spec, SendToTableOperatorSpec):
            return impl.send_to_table(self.context.get_store(store_name("table-" + spec.table_spec.table_id)))
        if isinstance(spec, WindowOperatorSpec):
            window = impl.WindowOperator(
                self, spec, self.context.get_store(store_name(spec.op_id, "-w")), self._downstream(spec), self.counters
            )
            self.windows.append(window)
            self.timed.append((window, self.upstream_ssps.get(spec.op_id, frozenset())))
            return window
        raise OperatorError(f"operator {spec.op_id!r}: no runtime for operator type {spec.op_type!r}")

    def _table_output(self, spec: OperatorSpec) -> Callable[[Any], None] | None:
        """A batch map's result goes whole to an output stream (not keyed, no descriptor serde)
        whose system appends tables (Iceberg, files): ``send_table`` of that stream, else None."""
        if not isinstance(spec, OutputOperatorSpec):
            return None
        out = spec.output_stream
        if out.kv or out.serde is not None or out.key_serde is not None:
            return None
        if not isinstance(self.context.producers.get(out.system), AppendsTables):
            return None
        stream, send_table = SystemStream(out.system, out.physical_name), self.collector.send_table
        return lambda table: send_table(stream, table)

    # -- per message ---------------------------------------------------------------------------
    def process(self, envelope: Any, collector: Any, coordinator: Any) -> None:
        self.event_time = envelope.event_time
        self.routes[envelope.ssp](envelope)

    def _flush_batches(self) -> None:
        """Every map_batches operator maps what it holds, upstream ones first (what one sends on
        reaches a later one before that one flushes)."""
        for batch_map in self.batch_maps:
            batch_map.flush()

    # -- time ----------------------------------------------------------------------------------
    def window(self, collector: Any, coordinator: Any) -> None:
        now = int(time.time() * 1000)
        self.event_time = None
        for op, _ in self.timed:
            on_timer = getattr(op, "on_timer", None)
            if on_timer is not None:
                on_timer(now)
        assert self.input_watermarks is not None
        # an ended partition stays ended: its last messages may still advance its watermark here,
        # after its end-of-stream, and that must not pull it back from "no longer holds others back"
        advanced = [(ssp, wm) for ssp, wm in self.input_watermarks.advanced() if ssp not in self.ended]
        if advanced:
            for ssp, wm in advanced:
                self.ssp_watermarks[ssp] = wm
            self._watermarks_changed()
        self._flush_batches()  # what the timers and watermarks sent into a batch map

    def _on_intermediate_watermark(self, ssp: SystemStreamPartition, watermark: int) -> None:
        if ssp in self.ended:
            return
        self.ssp_watermarks[ssp] = watermark
        self._watermarks_changed()
        self._flush_batches()

    def _watermarks_changed(self) -> None:
        marks = self.ssp_watermarks
        self.event_time = None
        for op, ssps in self.timed:
            if not ssps or op_ended(op):  # Samza: end-of-stream is the last control message an operator sends
                continue
            wm = min(marks[s] for s in ssps)
            if wm <= op.last_watermark or wm == WATERMARK_NOT_EXIST:
                continue
            op.last_watermark = wm
            if isinstance(op, impl.PartitionBy):
                if wm < _ENDED and op.task_count:
                    self.sender.send_watermark(op.stream, op.partitions, wm)
            elif wm < _ENDED:
                op.on_watermark(wm)

    def _on_partition_end(self, ssp: SystemStreamPartition) -> None:
        if ssp in self.ended:
            return
        self.ended.add(ssp)
        self.ssp_watermarks[ssp] = _ENDED
        self.event_time = None
        ended = self.ended
        for op, ssps in self.timed:
            if op_ended(op) or not ssps or not ssps <= ended:
                continue
            op.ended = True
            if isinstance(op, impl.PartitionBy):
                if op.task_count:
                    self.sender.send_end_of_stream(op.stream, op.partitions)
            elif isinstance(op, impl.WindowOperator):
                op.on_end_of_stream()
        self._flush_batches()

    def on_end_of_stream(self, collector: Any, coordinator: Any) -> None:
        """Every partition has ended; the per-operator ends already ran as partitions ended."""

    @property
    def late_messages(self) -> int:
        return sum(w.late_messages for w in self.windows)

    def operator_metrics(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for w in self.windows:
            out[w.op_id] = {"late_messages": w.late_messages}
        for j in self.joins:
            out[j.op_id] = {"expired": j.expired}
        return out


class BatchOperatorTask(OperatorTask):
    """The operator task of a graph with ``map_batches``: a batch task (``process_batch``), so its
    batch maps see whole batches. Each envelope of the batch runs through the per-message chains
    (their event time is the envelope's); then every batch map flushes, with the batch's last
    event time on what it sends. A files input read straight into a batch map arrives as the
    files' Arrow batches (``columnar_inputs``), handed to the batch maps whole."""

    def __init__(self, prepared: Any, task_name: str, factory: Any) -> None:
        super().__init__(prepared, task_name, factory)
        self.columnar_inputs = columnar_inputs(prepared)

    def process_batch(self, envelopes: Any, collector: Any, coordinator: Any) -> None:
        first = envelopes[0]
        if type(first) is ColumnarEnvelope:  # a columnar input's run: its Arrow batches whole
            take = self.columnar_routes[first.ssp]
            self.event_time = None
            for envelope in envelopes:
                take(envelope.message)
        else:
            route = self.routes[first.ssp]
            for envelope in envelopes:
                self.event_time = envelope.event_time
                route(envelope)
        self._flush_batches()


def columnar_inputs(prepared: Any) -> frozenset[SystemStream]:
    """The inputs a graph's task takes as Arrow batches: those read straight into a
    ``map_batches`` (one of the operators right after the input is one) — not intermediate
    streams, not keyed inputs (their messages are KVs), not inputs with a descriptor serde (it
    deserializes one message at a time). Whether they then arrive as batches is their system's
    say: the files system reads columns, the log and Kafka deliver messages as before."""
    return frozenset(
        SystemStream(spec.system, spec.physical_name)
        for spec in prepared.descriptor.input_operators.values()
        if spec.op_id in prepared.op_ids
        and not (spec.is_intermediate or spec.kv or spec.serde is not None or spec.key_serde is not None)
        and any(isinstance(d, BatchMapOperatorSpec) for d in spec.registered_operator_specs)
    )


def _columnar_route(targets: list[Any]) -> Callable[[Any], None]:
    """An Arrow record batch of a columnar input to the operators after it: whole to the batch
    maps, one dict per row to the others (a filter or map beside the batch map)."""
    whole = tuple(target.add_batch for target in targets if isinstance(target, BatchMap))
    others = [target for target in targets if not isinstance(target, BatchMap)]
    per_row = impl.fan_out(others) if others else None

    def take(batch: Any) -> None:
        for add in whole:
            add(batch)
        if per_row is not None:
            for row in batch.to_pylist():
                per_row(row)

    return take


def op_ended(op: Any) -> bool:
    return bool(getattr(op, "ended", False))


class OperatorTaskFactory:
    """TaskFactory of an application: one OperatorTask per task name."""

    def __init__(self, prepared: Any) -> None:
        self.prepared = prepared

    def create_task(self, task_name: str) -> OperatorTask:
        if any(isinstance(spec, BatchMapOperatorSpec) for spec in self.prepared.order):
            return BatchOperatorTask(self.prepared, task_name, self)
        return OperatorTask(self.prepared, task_name, self)

    def side_inputs_processor(self, store: str) -> TableSideInputsProcessor | None:
        """The container's side-inputs manager asks for the processor of a table's store."""
        for table in self.prepared.side_input_tables:
            if store_name("table-" + table.table_id) == store:
                return TableSideInputsProcessor(table.side_input_fn)
        return None
