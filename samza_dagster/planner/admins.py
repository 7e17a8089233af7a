"""Partition counts from the system admins, and planning straight from a config.

``stream_partitions_from_admins`` asks each system's admin once, for all of that system's
streams in one ``get_system_stream_metadata`` call (Kafka answers for every partition of every
topic in one round trip). ``plan_from_config`` is what ``samza-dagster plan`` runs: it loads
``app.class`` (a StreamApplication) or, for a low-level job, plans ``task.inputs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from samza_dagster.application.app import StreamApplication, StreamApplicationDescriptor
from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.model import SystemStream
from samza_dagster.planner.errors import PlanningError
from samza_dagster.planner.execution_planner import ExecutionPlanner
from samza_dagster.planner.plan import ExecutionPlan, JobInfo, Stage, StreamInfo
from samza_dagster.serde.registry import load_class
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.factories import absent_input_hint, stop_admin, system_admin, system_factory


def partition_counts(config: Config, streams: Iterable[SystemStream]) -> dict[SystemStream, int]:
    """Partition count of every stream that exists, one batched admin call per system.

    A stream the system does not know is left out (whether that is an error is the caller's
    decision: an output may be created later, an input may not)."""
    by_system: dict[str, list[str]] = {}
    for ss in streams:
        names = by_system.setdefault(ss.system, [])
        if ss.stream not in names:
            names.append(ss.stream)
    result: dict[SystemStream, int] = {}
    for system, names in by_system.items():
        admin = system_factory(config, system).get_admin(system, config)
        try:
            metadata = fetch_metadata(admin, system, names)
        finally:
            stop_admin(admin)
        for name in names:
            md = metadata.get(name)
            if md is not None and md.partitions:
                result[SystemStream(system, name)] = len(md.partitions)
    return result


def fetch_metadata(admin: Any, system: str, names: list[str]) -> dict[str, Any]:
    """One batched call; an admin that fails the whole batch on a missing stream
    (StreamNotFoundError) is asked again without it, so the others are still answered."""
    pending = list(names)
    while pending:
        try:
            return admin.get_system_stream_metadata(pending)
        except StreamNotFoundError as exc:
            if exc.stream not in pending:
                raise
            pending.remove(exc.stream)
    return {}


def absent_input(config: Config, ss: SystemStream) -> str:
    """What ``samza-dagster run`` says of an input of ``task.inputs`` that does not exist (or has
    no partition): the stream it most likely meant, or where the system looked."""
    with system_admin(config, ss.system) as admin:
        exists = ss.stream in fetch_metadata(admin, ss.system, [ss.stream])
        hint = absent_input_hint(admin, ss.system, ss.stream)
    what = "has no partition" if exists else "does not exist"
    return f"input stream {ss} {what} (config key {keys.TASK_INPUTS.name!r}): {hint}"


def stream_partitions_from_admins(
    config: Config | Mapping[str, Any], app: StreamApplication | StreamApplicationDescriptor
) -> dict[str, int]:
    """stream id → partition count for the inputs, outputs and side inputs of ``app``."""
    cfg = config if isinstance(config, Config) else Config(config)
    descriptor = app if isinstance(app, StreamApplicationDescriptor) else StreamApplicationDescriptor.of(app, cfg)
    ids: dict[str, SystemStream] = {}
    for spec in descriptor.input_operators.values():
        if not spec.is_intermediate:
            ids[spec.stream_id] = SystemStream(spec.system, spec.physical_name)
    for impl in descriptor.output_streams.values():
        if not impl.is_intermediate:
            ids[impl.stream_id] = SystemStream(impl.system, impl.physical_name)
    for table in descriptor.tables.values():
        for sid in table.side_inputs:
            ids[sid] = SystemStream(table.side_input_systems[sid], table.side_input_physical_names[sid])
    counts = partition_counts(cfg, ids.values())
    return {sid: counts[ss] for sid, ss in ids.items() if ss in counts}


def load_application(config: Config) -> StreamApplication:
    """Instantiate ``app.class``; errors name the key."""
    key = keys.APP_CLASS.name
    path = config.get_required(key)
    cls = load_class(path, key)
    if not (isinstance(cls, type) and issubclass(cls, StreamApplication)):
        raise ConfigError(f"config key {key!r}: {path} is not a StreamApplication subclass", key=key)
    try:
        return cls()
    except Exception as exc:
        raise ConfigError(f"config key {key!r}: cannot instantiate {path}: {exc}", key=key) from exc


def plan_from_config(config: Config | Mapping[str, Any]) -> ExecutionPlan:
    """The plan of the job ``config`` describes: ``app.class`` (high-level) or ``task.class``
    (low-level: just ``task.inputs``, counts from the admins, no operators)."""
    cfg = config if isinstance(config, Config) else Config(config)
    if keys.APP_CLASS.get(cfg):
        app = load_application(cfg)
        descriptor = StreamApplicationDescriptor.of(app, cfg)
        partitions = stream_partitions_from_admins(cfg, descriptor)
        return ExecutionPlanner(cfg, partitions).plan(descriptor)
    if keys.TASK_CLASS.get(cfg):
        return low_level_plan(cfg)
    raise ConfigError(
        "config key 'app.class' is not set: set app.class (module:Class of a StreamApplication) "
        "or task.class (module:Class of a task)",
        key=keys.APP_CLASS.name,
    )


def low_level_plan(config: Config, partitions: Mapping[SystemStream, int] | None = None) -> ExecutionPlan:
    """A plan for a low-level task: its inputs only (roles, priorities, counts)."""
    job = JobConfig(config)
    inputs = TaskConfig(config).inputs
    if not inputs:
        key = keys.TASK_INPUTS.name
        raise ConfigError(f"config key {key!r} lists no input streams (system.stream,...)", key=key)
    counts = dict(partitions) if partitions is not None else partition_counts(config, inputs)
    streams_config = StreamConfig(config)
    legacy = TaskConfig(config).legacy_priorities()
    streams: dict[str, StreamInfo] = {}
    explicit: dict[str, int] = {}
    for ss in inputs:
        count = counts.get(ss)
        if count is None:
            raise PlanningError(absent_input(config, ss), streams={str(ss): None})
        ids = streams_config.stream_ids_for(ss, job.default_system)
        sid = ids[0] if ids else ss.stream
        info = StreamInfo(sid, ss.system, ss.stream, count, {"input"})
        info.bootstrap = streams_config.is_bootstrap(ss)
        info.bounded = streams_config.is_bounded(ss)
        if info.bootstrap:
            info.roles.add("bootstrap")
        priority = streams_config.priority(ss)
        if priority is None:
            priority = legacy.get(ss)
        if priority is not None:
            explicit[sid] = priority
        streams[sid] = info
    top = max([0, *explicit.values()]) + 1
    for info in streams.values():
        info.priority = explicit.get(info.id, top if info.bootstrap else 0)
    stage = Stage("stage-0", list(streams), [], [], [], [], [])
    job_info = JobInfo(job.name, job.id, [stage], list(streams), [], [], [])
    return ExecutionPlan(
        job.name, job.id, "low-level", streams, {}, {}, [], [], [job_info], task_class=keys.TASK_CLASS.get(config)
    )


def configured_plan(config: Config) -> ExecutionPlan:
    """``plan_from_config`` with configured partition counts (``streams.<id>.partitions``) taking
    precedence over lookups: the plan of a job whose streams do not exist yet — a fresh checkout,
    an empty log — still comes out, and no broker is asked for counts the config knows."""
    if keys.APP_CLASS.get(config):
        return _high_level(config)
    if keys.TASK_CLASS.get(config):
        return _low_level(config)
    return plan_from_config(config)  # raises the ConfigError naming app.class


def _low_level(config: Config) -> ExecutionPlan:
    job = JobConfig(config)
    streams = StreamConfig(config)
    counts: dict[SystemStream, int] = {}
    unknown: list[SystemStream] = []
    for ss in TaskConfig(config).inputs:
        configured = next(
            (n for sid in streams.stream_ids_for(ss, job.default_system) if (n := streams.partitions(sid)) is not None),
            None,
        )
        if configured is not None:
            counts[ss] = configured
        else:
            unknown.append(ss)
    if unknown:
        counts.update(partition_counts(config, unknown))
    return low_level_plan(config, counts)


def _high_level(config: Config) -> ExecutionPlan:
    """Plan on the declared and configured counts alone (the planner falls back to
    ``streams.<id>.partitions`` for a stream it was given no count for); only when that leaves a
    stream without one are the admins asked — by the planner's own ``plan_from_config``."""
    descriptor = StreamApplicationDescriptor.of(load_application(config), config)
    try:
        plan = ExecutionPlanner(config, {}).plan(descriptor)
    except PlanningError as exc:
        if not any(count is None for count in exc.streams.values()):
            raise  # a real disagreement, not a missing count
        return plan_from_config(config)
    if any(s.partitions is None for s in plan.streams.values() if not s.is_intermediate):
        return plan_from_config(config)
    return plan
