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
from samza_dagster.planner import (
    ExecutionPlan,
    ExecutionPlanner,
    PlanningError,
    load_application,
    low_level_plan,
    partition_counts,
    plan_from_config,
)
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
