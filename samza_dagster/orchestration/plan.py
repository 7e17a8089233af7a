"""The plan an application's assets are built from, computed when definitions load.

Partition counts come from config first (``streams.<id>.partitions``) and only the streams
without one are looked up through the system admins (batched). So the definitions of an
application whose input streams do not exist yet — a fresh checkout, an empty log — still load,
and loading does not wait on a broker for streams whose counts are known.
"""

from __future__ import annotations

from samza_dagster.application.app import StreamApplicationDescriptor
from samza_dagster.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.planner import ExecutionPlan, ExecutionPlanner, load_application, low_level_plan, partition_counts, plan_from_config
from samza_dagster.system.model import SystemStream


def plan_for_definitions(config: Config) -> ExecutionPlan:
    """``plan_from_config`` with configured partition counts taking precedence over lookups."""
    if config.get_str("app.class"):
        return _high_level(config)
    if config.get_str("task.class"):
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
    descriptor = StreamApplicationDescriptor.of(load_application(config), config)
    streams = StreamConfig(config)
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
    partitions: dict[str, int] = {}
    lookup: dict[str, SystemStream] = {}
    for sid, ss in ids.items():
        configured = streams.partitions(sid)
        if configured is not None:
            partitions[sid] = configured
        else:
            lookup[sid] = ss
    if lookup:
        found = partition_counts(config, lookup.values())
        partitions.update({sid: found[ss] for sid, ss in lookup.items() if ss in found})
    return ExecutionPlanner(config, partitions).plan(descriptor)
