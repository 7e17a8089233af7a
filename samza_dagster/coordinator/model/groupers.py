"""SystemStreamPartition groupers (input partitions → tasks) and the task → container grouper.

``group-by-partition``: one task per partition number, named ``Partition <n>``, owning partition
n of every input stream (so streams with the same partitioning are co-partitioned in one task).
``group-by-system-stream-partition``: one task per input partition, named
``SystemStreamPartition [system, stream, n]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from samza_dagster.config import keys
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import SystemStreamPartition

GROUP_BY_PARTITION = "group-by-partition"
GROUP_BY_SYSTEM_STREAM_PARTITION = "group-by-system-stream-partition"

SspGrouper = Callable[[Iterable[SystemStreamPartition]], dict[str, frozenset[SystemStreamPartition]]]


def partition_task_name(partition: int) -> str:
    return f"Partition {partition}"


def ssp_task_name(ssp: SystemStreamPartition) -> str:
    return f"SystemStreamPartition [{ssp.system}, {ssp.stream}, {ssp.partition}]"


def group_by_partition(ssps: Iterable[SystemStreamPartition]) -> dict[str, frozenset[SystemStreamPartition]]:
    groups: dict[int, set[SystemStreamPartition]] = {}
    for ssp in ssps:
        groups.setdefault(ssp.partition, set()).add(ssp)
    return {partition_task_name(p): frozenset(s) for p, s in groups.items()}


def group_by_system_stream_partition(
    ssps: Iterable[SystemStreamPartition],
) -> dict[str, frozenset[SystemStreamPartition]]:
    return {ssp_task_name(ssp): frozenset((ssp,)) for ssp in ssps}


SSP_GROUPERS: dict[str, SspGrouper] = {
    GROUP_BY_PARTITION: group_by_partition,
    GROUP_BY_SYSTEM_STREAM_PARTITION: group_by_system_stream_partition,
}


def ssp_grouper(name: str) -> SspGrouper:
    try:
        return SSP_GROUPERS[name]
    except KeyError:
        key = keys.JOB_GROUPER.name
        raise ConfigError(
            f"config key {key!r} names unknown grouper {name!r}; known: {', '.join(SSP_GROUPERS)}", key=key
        ) from None


_DIGITS = re.compile(r"(\d+)")


def task_sort_key(task_name: str) -> tuple:
    """Natural order: ``Partition 2`` before ``Partition 10``, so task n lands where a reader
    expects and changelog partitions of a fresh job follow partition numbers."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(task_name))


def sorted_task_names(task_names: Iterable[str]) -> list[str]:
    return sorted(task_names, key=task_sort_key)


def group_tasks_into_containers(task_names: Iterable[str], container_count: int) -> dict[str, list[str]]:
    """Round-robin over the sorted task names: balanced (sizes differ by at most one) and
    deterministic, so every coordinator computes the same assignment. Container ids are
    ``"0"``, ``"1"``, ...

    As in Samza, more containers than tasks is an error (a container would have nothing to do).
    """
    names = sorted_task_names(task_names)
    key = keys.JOB_CONTAINER_COUNT.name
    if container_count < 1:
        raise ConfigError(f"{key} must be at least 1, got {container_count}", key=key)
    if names and container_count > len(names):
        raise ConfigError(
            f"{key} is {container_count} but the job has only {len(names)} tasks; a container cannot run without tasks",
            key=key,
        )
    containers: dict[str, list[str]] = {str(i): [] for i in range(container_count)}
    for index, name in enumerate(names):
        containers[str(index % container_count)].append(name)
    return containers


def assign_changelog_partitions(task_names: Iterable[str], existing: dict[str, int]) -> dict[str, int]:
    """Changelog partition per task: a task keeps the partition it had; a new task gets the next
    number after the largest ever assigned (in task order), so no two tasks — present or past —
    share a changelog partition. Returns the full mapping for ``task_names``."""
    next_free = max(existing.values(), default=-1) + 1
    result: dict[str, int] = {}
    for name in sorted_task_names(task_names):
        partition = existing.get(name)
        if partition is None:
            partition = next_free
            next_free += 1
        result[name] = partition
    return result
