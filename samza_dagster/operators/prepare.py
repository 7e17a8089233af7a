"""Preparing an application to run: plan it, choose the stage(s) to run, create the
intermediate streams, and add to the config what the operator runtime needs.

``prepare_application(config) -> PreparedApplication`` — a runner then builds the JobModel
from ``input_streams`` (excluding ``side_inputs``) and each container with
:func:`create_container`.

Config the runtime reads (all optional):

* ``app.stage`` — run one stage only (``stage-<n>`` or ``<n>``, the planner's data-flow order)
  as its own job: it reads its inputs (intermediate streams included) and writes its outputs.
  The job runs as ``<job.name>-stage-<n>`` (own checkpoints, coordinator stream and changelogs)
  while stream ids keep the application's ``job.name``. The producer task count of an
  intermediate stream it reads comes from the plan: the upstream stage's job model, grouped
  from its planned inputs as this config groups them (Samza 1.8's control messages carry no
  count; see ``producer_task_counts``).
* ``app.store.factory`` — factory of operator stores (``rocksdb`` default, or ``inmemory``);
  every join/window/table store gets a changelog ``<job>-<id>-<store>-changelog`` on the
  default system, except side-input tables (rebuilt from their side inputs).
* ``app.join.time`` — ``processing`` (default) or ``event``: the time domain of join TTLs.
* ``task.watermark.interval.ms`` (default 200) — how often input watermarks are published;
  it sets ``task.window.ms`` when that is not configured.
* ``task.watermark.allowed.lateness.ms`` (default 0) — input watermark = max event time seen
  minus this.

Serdes — the descriptor's win: a serde given on an input or output descriptor
(``serde=`` / ``key_serde=``) is applied by the operator runtime, and the configured serde of
that field (``streams.<id>.samza.msg.serde``, ``systems.<system>.samza.msg.serde``, ...) is
blanked in the run config so the collector / task instance do not apply a second one. A field
the descriptor leaves unset keeps the configured serde.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.application.app import StreamApplicationDescriptor
from samza_dagster.application.specs import (
    InputOperatorSpec,
    OperatorSpec,
    OutputStreamImpl,
    PartitionByOperatorSpec,
    TableSpec,
)
from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.container import SamzaContainer
from samza_dagster.coordinator.model.builder import input_ssps
from samza_dagster.coordinator.model.groupers import ssp_grouper
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.model import StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.operators.analysis import operator_stores, store_name, topological, upstream_inputs
from samza_dagster.operators.task import OperatorTaskFactory
from samza_dagster.planner import ExecutionPlan, plan_from_config
from samza_dagster.planner.plan import Stage
from samza_dagster.serde.serdes import JsonSerde
from samza_dagster.system.factories import stop_admin, system_factory

STAGE_KEY = keys.APP_STAGE.name
ORIGINAL_JOB_NAME_KEY = keys.APP_STAGE_JOB_NAME.name
#: serde of the operators' own stores (window, join, table state) unless stores.<s>.*.serde names one
OPERATOR_STORE_SERDE = "msgpack"
#: how every intermediate stream is read: its bytes as written, from the oldest offset
_INTERMEDIATE_READ: tuple[tuple[keys.ConfigKey[str | None], str], ...] = (
    (keys.STREAM_MSG_SERDE, "bytes"),
    (keys.STREAM_KEY_SERDE, "bytes"),
    (keys.STREAM_OFFSET_DEFAULT, "oldest"),
)


@dataclass
class PreparedApplication:
    config: Config
    plan: ExecutionPlan
    descriptor: StreamApplicationDescriptor
    stage: str | None
    op_ids: set[str]
    input_streams: dict[SystemStream, int]
    side_inputs: list[SystemStream]
    stream_specs: list[StreamSpec]
    upstream: dict[str, set[str]]
    order: list[OperatorSpec]
    side_input_tables: list[TableSpec]
    join_event_time: bool = False
    _serdes: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False)
    task_factory: Any = None

    @property
    def exclude(self) -> list[SystemStream]:
        """Streams the JobModel must not group into tasks (the side inputs)."""
        return self.side_inputs

    def partitions(self, stream_id: str) -> int:
        count = self.plan.streams[stream_id].partitions
        if not count:
            raise ConfigError(f"stream {stream_id!r} has no planned partition count")
        return count

    def intermediate_serdes(self, stream_id: str) -> tuple[Any, Any]:
        """(key serde, user msg serde) of an intermediate stream: the partition_by's, else JSON."""
        serdes = self._serdes.get(stream_id)
        if serdes is None:
            impl = self.descriptor.output_streams[stream_id]
            serdes = (impl.key_serde or JsonSerde(), impl.serde or JsonSerde())
            self._serdes[stream_id] = serdes
        return serdes

    def _intermediate_producers(self) -> dict[SystemStream, set[str]]:
        """intermediate stream → ids of the streams upstream of the partition_by writing it,
        for the partition_by operators this job runs."""
        out: dict[SystemStream, set[str]] = {}
        for spec in self.descriptor.operators.values():
            if isinstance(spec, PartitionByOperatorSpec) and spec.op_id in self.op_ids:
                o = spec.output_stream
                out.setdefault(SystemStream(o.system, o.physical_name), set()).update(self.upstream.get(spec.op_id, ()))
        return out

    def own_producer_counts(self, job_model: JobModel) -> dict[SystemStream, int]:
        """Producer task count of every intermediate stream this job writes: the tasks of
        the job consuming a stream upstream of its partition_by (Samza 1.x's rule,
        ``OperatorImplGraph.getProducerTaskCountForIntermediateStreams``)."""
        ids = self._stream_ids()
        counts: dict[SystemStream, int] = {}
        for stream, sids in self._intermediate_producers().items():
            tasks = (task.ssps for container in job_model.containers.values() for task in container.tasks.values())
            counts[stream] = _consuming_tasks(tasks, {ids[s] for s in sids})
        return counts

    def producer_task_counts(self, job_model: JobModel) -> dict[SystemStream, int]:
        """Producer task count of every intermediate stream this job reads. Samza 1.8's control
        messages carry no count, so the consumer counts as Samza 1.x does: the tasks consuming a
        stream upstream of the partition_by writing it. A stream this job writes too counts in
        ``job_model``; one written by another stage's job (``app.stage``) counts in that job's
        model, grouped from the stage's planned inputs with this config's grouper — what that
        job's coordinator builds from the same config."""
        counts = self.own_producer_counts(job_model)
        ids = self._stream_ids()
        for spec in self.descriptor.input_operators.values():
            stream = ids[spec.stream_id]
            if spec.op_id in self.op_ids and spec.is_intermediate and stream not in counts:
                counts[stream] = self._upstream_stage_task_count(stream)
        return counts

    def _stream_ids(self) -> dict[str, SystemStream]:
        return {sid: SystemStream(s.system, s.physical_name) for sid, s in self.descriptor.input_operators.items()}

    def _upstream_stage_task_count(self, stream: SystemStream) -> int:
        writers = [
            spec
            for spec in self.descriptor.operators.values()
            if isinstance(spec, PartitionByOperatorSpec)
            and SystemStream(spec.output_stream.system, spec.output_stream.physical_name) == stream
        ]
        if len(writers) != 1:
            raise ConfigError(
                f"intermediate stream {stream.system}.{stream.stream}: expected one partition_by writing it in the "
                f"plan, found {len(writers)}",
                key=STAGE_KEY,
            )
        writer = writers[0]
        stage = next((st for st in self.plan.jobs[0].stages if writer.op_id in st.operators), None)
        if stage is None:
            raise ConfigError(
                f"intermediate stream {stream.system}.{stream.stream}: no stage of the plan runs its partition_by "
                f"{writer.op_id!r}",
                key=STAGE_KEY,
            )
        stage_ops = set(stage.operators)
        inputs = _input_streams(self.plan, self.descriptor, stage_ops)
        side = {
            SystemStream(t.side_input_systems[s], t.side_input_physical_names[s])
            for t in _side_input_tables(self.descriptor, stage_ops)
            for s in t.side_inputs
        }
        groups = ssp_grouper(JobConfig(self.config).grouper)(input_ssps(inputs, side))
        ids = self._stream_ids()
        return _consuming_tasks(groups.values(), {ids[s] for s in self.upstream.get(writer.op_id, ())})

    def create_streams(self) -> None:
        """Create the intermediate streams (idempotent; an existing one must have the count)."""
        for spec in self.stream_specs:
            admin = system_factory(self.config, spec.system).get_admin(spec.system, self.config)
            try:
                try:
                    admin.create_stream(spec)
                except Exception:  # noqa: BLE001 - exists: its count is checked below
                    pass
                md = admin.get_system_stream_metadata([spec.physical_name]).get(spec.physical_name)
                actual = len(md.partitions) if md is not None else 0
                if actual != spec.partition_count:
                    raise ConfigError(
                        f"intermediate stream {spec.system}.{spec.physical_name} has {actual} partitions, "
                        f"the plan needs {spec.partition_count}",
                        key=keys.JOB_INTERMEDIATE_STREAM_PARTITIONS.name,
                    )
            finally:
                stop_admin(admin)


def _consuming_tasks(tasks: Iterable[Iterable[SystemStreamPartition]], streams: set[SystemStream]) -> int:
    """How many of ``tasks`` (each its partitions) consume a partition of one of ``streams``."""
    return sum(1 for ssps in tasks if any(ssp.system_stream in streams for ssp in ssps))


def _select_stage(plan: ExecutionPlan, raw: str) -> Stage:
    stages = plan.jobs[0].stages
    wanted = raw.strip()
    if wanted.isdigit():
        wanted = f"stage-{wanted}"
    for stage in stages:
        if stage.id == wanted:
            return stage
    known = ", ".join(s.id for s in stages)
    raise ConfigError(f"config key {STAGE_KEY!r}: no stage {raw!r} (stages: {known})", key=STAGE_KEY)


def prepare_application(config: Config | Mapping[str, Any], *, create_streams: bool = True) -> PreparedApplication:
    """Plan the application, choose what this job runs (one stage or all), and return it with
    the run config the operator runtime needs; the intermediate streams are created unless
    ``create_streams`` is false (a caller that only inspects the plan)."""
    cfg = config if isinstance(config, Config) else Config(config)
    plan, descriptor = _plan(cfg)
    stage_id, op_ids = _stage_to_run(cfg, plan, descriptor)
    side_tables = _side_input_tables(descriptor, op_ids)
    job_name = descriptor.job_name
    run_name = f"{job_name}-{stage_id}" if stage_id else job_name
    default_system = cfg.get_str(keys.JOB_DEFAULT_SYSTEM.name) or descriptor.default_system  # unset: the descriptor's
    specs, overrides = _intermediate_streams(plan)
    overrides.update(_descriptor_serde_overrides(cfg, descriptor, default_system))
    overrides.update(_operator_store_overrides(cfg, descriptor, op_ids, default_system, run_name))
    overrides.update(_side_input_store_overrides(side_tables))
    if not cfg.get_str(keys.TASK_WINDOW_MS.name):
        overrides[keys.TASK_WINDOW_MS.name] = str(keys.TASK_WATERMARK_INTERVAL_MS.get(cfg))
    if stage_id:
        overrides[keys.JOB_NAME.name] = run_name
        overrides[ORIGINAL_JOB_NAME_KEY] = job_name
    prepared = PreparedApplication(
        config=cfg.with_overrides(overrides),
        plan=plan,
        descriptor=descriptor,
        stage=stage_id,
        op_ids=op_ids,
        input_streams=_input_streams(plan, descriptor, op_ids),
        side_inputs=[
            SystemStream(t.side_input_systems[s], t.side_input_physical_names[s])
            for t in side_tables
            for s in t.side_inputs
        ],
        stream_specs=specs,
        upstream=upstream_inputs(descriptor),
        order=topological(descriptor.all_operator_specs()),
        side_input_tables=side_tables,
        join_event_time=keys.APP_JOIN_TIME.get(cfg) == "event",
    )
    prepared.task_factory = OperatorTaskFactory(prepared)
    if create_streams:
        prepared.create_streams()
    return prepared


def _plan(cfg: Config) -> tuple[ExecutionPlan, StreamApplicationDescriptor]:
    """The application's plan. A stage's config runs under ``<job.name>-stage-<n>``, but its
    streams are named after the application's own job name, so the plan is made with that."""
    original = cfg.get_str(ORIGINAL_JOB_NAME_KEY)
    plan = plan_from_config(cfg.with_overrides({keys.JOB_NAME.name: original}) if original else cfg)
    if plan.descriptor is None:
        raise ConfigError(
            f"config key {keys.APP_CLASS.name!r} is not set: the operator runtime runs high-level applications",
            key=keys.APP_CLASS.name,
        )
    return plan, plan.descriptor


def _stage_to_run(
    cfg: Config, plan: ExecutionPlan, descriptor: StreamApplicationDescriptor
) -> tuple[str | None, set[str]]:
    """``(stage id, operator ids)`` this job runs: with ``app.stage`` one stage's operators,
    else (no stage) every operator of the application."""
    stage_raw = cfg.get_str(STAGE_KEY)
    if not stage_raw:
        return None, {s.op_id for s in descriptor.input_operators.values()} | set(descriptor.operators)
    stage = _select_stage(plan, stage_raw)
    return stage.id, set(stage.operators)


def _input_streams(
    plan: ExecutionPlan, descriptor: StreamApplicationDescriptor, op_ids: set[str]
) -> dict[SystemStream, int]:
    """The inputs of the operators this job runs, with their planned partition counts (the
    JobModel groups their partitions into tasks)."""
    return {
        SystemStream(spec.system, spec.physical_name): plan.streams[spec.stream_id].partitions or 1
        for spec in descriptor.input_operators.values()
        if spec.op_id in op_ids
    }


def _side_input_tables(descriptor: StreamApplicationDescriptor, op_ids: set[str]) -> list[TableSpec]:
    """Tables filled from side inputs that an operator of this job reads: their streams are
    kept out of the tasks' inputs and read by the container's side-inputs manager."""
    return [
        t
        for t in descriptor.tables.values()
        if t.side_inputs
        and any(getattr(s, "table_spec", None) is t and s.op_id in op_ids for s in descriptor.operators.values())
    ]


def _intermediate_streams(plan: ExecutionPlan) -> tuple[list[StreamSpec], dict[str, str]]:
    """The intermediate streams to create, and the config overrides for reading them. The
    partition_by writes final bytes (intermediate-message framing): no configured serde may
    touch them, whichever key (stream id first) a user set one under; they are read from the
    oldest offset, so nothing the upstream stage wrote before this job started is skipped."""
    specs: list[StreamSpec] = []
    overrides: dict[str, str] = {}
    for sid, count in plan.intermediate_streams.items():
        info = plan.streams[sid]
        specs.append(StreamSpec(sid, info.physical_name, info.system, count))
        overrides.update({d.system_stream_key(info.system, info.physical_name): v for d, v in _INTERMEDIATE_READ})
        overrides.update({d.key(stream_id=sid): v for d, v in _INTERMEDIATE_READ})
    return specs, overrides


def _operator_store_overrides(
    cfg: Config, descriptor: StreamApplicationDescriptor, op_ids: set[str], default_system: str, run_name: str
) -> dict[str, str]:
    """The stores of this job's windows, joins and tables: ``app.store.factory``, a serde that
    never runs code named by the bytes it reads (msgpack, never pickle) unless the user names
    one, and a changelog per logged store, named after the job that runs it (a stage's own)."""
    factory = keys.APP_STORE_FACTORY.get(cfg)
    overrides: dict[str, str] = {}
    for name, logged in operator_stores(descriptor, op_ids).items():
        overrides[keys.STORE_FACTORY.key(store=name)] = factory
        for definition in (keys.STORE_KEY_SERDE, keys.STORE_MSG_SERDE):
            key = definition.key(store=name)
            overrides[key] = cfg.get_str(key) or OPERATOR_STORE_SERDE
        if logged:
            changelog = f"{default_system}.{run_name}-{descriptor.job_id}-{name}-changelog"
            overrides[keys.STORE_CHANGELOG.key(store=name)] = changelog
    return overrides


def _side_input_store_overrides(side_tables: list[TableSpec]) -> dict[str, str]:
    """``stores.<table store>.side.inputs`` of each side-input table: the container's
    side-inputs manager fills the store from them and follows them while the job runs."""
    return {
        keys.STORE_SIDE_INPUTS.key(store=store_name("table-" + table.table_id)): ",".join(
            f"{table.side_input_systems[s]}.{table.side_input_physical_names[s]}" for s in table.side_inputs
        )
        for table in side_tables
    }


def _descriptor_serde_overrides(
    cfg: Config, descriptor: StreamApplicationDescriptor, default_system: str
) -> dict[str, str]:
    """Blank the configured serde of every (non-intermediate) stream field a descriptor gives a
    serde for — at every key the lookup would consult — so it is applied once, by the operators."""
    streams = StreamConfig(cfg)
    out: dict[str, str] = {}
    descs: list[InputOperatorSpec | OutputStreamImpl] = [
        s for s in descriptor.input_operators.values() if not s.is_intermediate
    ]
    descs += [o for o in descriptor.output_streams.values() if not o.is_intermediate]
    for d in descs:
        ss = SystemStream(d.system, d.physical_name)
        for definition, serde in ((keys.STREAM_MSG_SERDE, d.serde), (keys.STREAM_KEY_SERDE, d.key_serde)):
            if serde is None:
                continue
            for sid in {d.stream_id, *streams.stream_ids_for(ss, default_system)}:
                out[definition.key(stream_id=sid)] = ""
            out[definition.system_stream_key(ss.system, ss.stream)] = ""
    return out


def create_container(prepared: PreparedApplication, container_id: str, job_model: Any, **kwargs: Any) -> Any:
    """A SamzaContainer running the application's operator tasks."""
    return SamzaContainer(container_id, job_model, task_factory=prepared.task_factory, **kwargs)
