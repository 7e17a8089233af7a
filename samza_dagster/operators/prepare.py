"""Preparing an application to run: plan it, choose the stage(s) to run, create the
intermediate streams, and add to the config what the operator runtime needs.

``prepare_application(config) -> PreparedApplication`` — a runner then builds the JobModel
from ``input_streams`` (excluding ``side_inputs``) and each container with
:func:`create_container`.

Config the runtime reads (all optional):

* ``app.stage`` — run one stage only (``stage-<n>`` or ``<n>``, the planner's data-flow order)
  as its own job: it reads its inputs (intermediate streams included) and writes its outputs.
  The job runs as ``<job.name>-stage-<n>`` (own checkpoints, coordinator stream and changelogs)
  while stream ids keep the application's ``job.name``. The producer count of an intermediate
  stream it reads comes from the upstream job's control messages (``taskCount``).
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

from collections.abc import Mapping
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
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.container import SamzaContainer
from samza_dagster.model import StreamSpec, SystemStream
from samza_dagster.operators.analysis import operator_stores, store_name, topological, upstream_inputs
from samza_dagster.operators.task import OperatorTaskFactory
from samza_dagster.planner import ExecutionPlan, plan_from_config
from samza_dagster.serde.serdes import JsonSerde
from samza_dagster.system.factories import system_factory

STAGE_KEY = keys.APP_STAGE.name
ORIGINAL_JOB_NAME_KEY = keys.APP_STAGE_JOB_NAME.name
#: serde of the operators' own stores (window, join, table state) unless stores.<s>.*.serde names one
OPERATOR_STORE_SERDE = "msgpack"


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

    def own_producer_counts(self, job_model: Any) -> dict[SystemStream, int]:
        """Producer task count of every intermediate stream this job writes: the tasks of
        the job consuming a stream upstream of its partition_by (Samza's rule)."""
        ids = {sid: SystemStream(s.system, s.physical_name) for sid, s in self.descriptor.input_operators.items()}
        counts: dict[SystemStream, int] = {}
        for stream, sids in self._intermediate_producers().items():
            wanted = {ids[s] for s in sids}
            n = 0
            for container in job_model.containers.values():
                for task in container.tasks.values():
                    if any(ssp.system_stream in wanted for ssp in task.ssps):
                        n += 1
            counts[stream] = n
        return counts

    def producer_task_counts(self, job_model: Any) -> dict[SystemStream, int]:
        """Known producer counts of the intermediate streams this job reads: those it also
        writes. Others (a stage run on its own) learn theirs from the control messages."""
        return self.own_producer_counts(job_model)

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
                        key="job.intermediate.stream.partitions",
                    )
            finally:
                stop = getattr(admin, "stop", None)
                if callable(stop):
                    stop()


def _select_stage(plan: ExecutionPlan, raw: str) -> Any:
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
    cfg = config if isinstance(config, Config) else Config(config)
    original = cfg.get_str(ORIGINAL_JOB_NAME_KEY)
    plan_cfg = cfg.with_overrides({"job.name": original}) if original else cfg
    plan = plan_from_config(plan_cfg)
    descriptor = plan.descriptor
    if descriptor is None:
        raise ConfigError(
            f"config key {keys.APP_CLASS.name!r} is not set: the operator runtime runs high-level applications",
            key=keys.APP_CLASS.name,
        )
    all_ids = {s.op_id for s in descriptor.input_operators.values()} | set(descriptor.operators)
    stage_raw = cfg.get_str(STAGE_KEY)
    stage_id = None
    op_ids = all_ids
    if stage_raw:
        stage = _select_stage(plan, stage_raw)
        stage_id = stage.id
        op_ids = set(stage.operators)

    input_streams: dict[SystemStream, int] = {}
    for spec in descriptor.input_operators.values():
        if spec.op_id in op_ids:
            input_streams[SystemStream(spec.system, spec.physical_name)] = plan.streams[spec.stream_id].partitions or 1
    side_tables = [
        t
        for t in descriptor.tables.values()
        if t.side_inputs
        and any(getattr(s, "table_spec", None) is t and s.op_id in op_ids for s in descriptor.operators.values())
    ]
    side_inputs = [
        SystemStream(t.side_input_systems[s], t.side_input_physical_names[s])
        for t in side_tables
        for s in t.side_inputs
    ]

    job_name = descriptor.job_name
    run_name = f"{job_name}-{stage_id}" if stage_id else job_name
    default_system = cfg.get_str(keys.JOB_DEFAULT_SYSTEM.name) or descriptor.default_system  # unset: the descriptor's
    overrides: dict[str, str] = {}
    specs: list[StreamSpec] = []
    for sid, count in plan.intermediate_streams.items():
        info = plan.streams[sid]
        specs.append(StreamSpec(sid, info.physical_name, info.system, count))
        # the partition_by writes final bytes (intermediate-message framing): no configured
        # serde may touch them, whichever key (stream id first) a user set one under
        for prefix in (f"systems.{info.system}.streams.{info.physical_name}.", f"streams.{sid}."):
            overrides[prefix + "samza.msg.serde"] = "bytes"
            overrides[prefix + "samza.key.serde"] = "bytes"
            overrides[prefix + "samza.offset.default"] = "oldest"
    overrides.update(_descriptor_serde_overrides(cfg, descriptor, default_system))
    factory = keys.APP_STORE_FACTORY.get(cfg)
    for name, logged in operator_stores(descriptor, op_ids).items():
        overrides[f"stores.{name}.factory"] = factory
        # the operators' own state: typed JSON, never pickle (which runs code named by the bytes
        # it reads) unless the user names a serde for the store
        for kind in ("key", "msg"):
            overrides[f"stores.{name}.{kind}.serde"] = (
                cfg.get_str(f"stores.{name}.{kind}.serde") or OPERATOR_STORE_SERDE
            )
        if logged:
            overrides[f"stores.{name}.changelog"] = f"{default_system}.{run_name}-{descriptor.job_id}-{name}-changelog"
    for table in side_tables:  # filled and followed by the container's side-inputs manager
        overrides[f"stores.{store_name('table-' + table.table_id)}.side.inputs"] = ",".join(
            f"{table.side_input_systems[s]}.{table.side_input_physical_names[s]}" for s in table.side_inputs
        )
    if not cfg.get_str(keys.TASK_WINDOW_MS.name):
        overrides[keys.TASK_WINDOW_MS.name] = str(keys.TASK_WATERMARK_INTERVAL_MS.get(cfg))
    if stage_id:
        overrides["job.name"] = run_name
        overrides[ORIGINAL_JOB_NAME_KEY] = job_name
    join_time = keys.APP_JOIN_TIME.get(cfg)
    run_config = cfg.with_overrides(overrides)
    specs_all = descriptor.all_operator_specs()
    prepared = PreparedApplication(
        run_config,
        plan,
        descriptor,
        stage_id,
        op_ids,
        input_streams,
        side_inputs,
        specs,
        upstream_inputs(descriptor),
        topological(specs_all),
        side_tables,
        join_time == "event",
    )

    prepared.task_factory = OperatorTaskFactory(prepared)
    if create_streams:
        prepared.create_streams()
    return prepared


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
        for kind, serde in (("msg", d.serde), ("key", d.key_serde)):
            if serde is None:
                continue
            prop = f"samza.{kind}.serde"
            for sid in {d.stream_id, *streams.stream_ids_for(ss, default_system)}:
                out[f"streams.{sid}.{prop}"] = ""
            out[f"systems.{ss.system}.streams.{ss.stream}.{prop}"] = ""
    return out


def create_container(prepared: PreparedApplication, container_id: str, job_model: Any, **kwargs: Any) -> Any:
    """A SamzaContainer running the application's operator tasks."""
    return SamzaContainer(container_id, job_model, task_factory=prepared.task_factory, **kwargs)
