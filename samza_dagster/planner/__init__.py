"""The ExecutionPlanner: partition-count agreement of joined streams, intermediate stream
counts, and the plan JSON (see :mod:`samza_dagster.planner.plan` for its schema)."""

from samza_dagster.planner.admins import (
    configured_plan,
    load_application,
    low_level_plan,
    partition_counts,
    plan_from_config,
    stream_partitions_from_admins,
)
from samza_dagster.planner.errors import PlanningError
from samza_dagster.planner.execution_planner import ExecutionPlanner
from samza_dagster.planner.graph_utils import find_cycle, traverse
from samza_dagster.planner.plan import ExecutionPlan, JobInfo, OperatorInfo, Stage, StreamInfo, TableInfo

__all__ = [
    "ExecutionPlan",
    "ExecutionPlanner",
    "JobInfo",
    "OperatorInfo",
    "PlanningError",
    "Stage",
    "configured_plan",
    "StreamInfo",
    "TableInfo",
    "find_cycle",
    "load_application",
    "low_level_plan",
    "partition_counts",
    "plan_from_config",
    "stream_partitions_from_admins",
    "traverse",
]
