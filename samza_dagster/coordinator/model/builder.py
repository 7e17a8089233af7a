"""Building a JobModel from config, input partition counts and the coordinator stream's
changelog assignments and container hosts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass

from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.coordinator.model.groupers import (
    assign_changelog_partitions,
    group_tasks_into_containers,
    ssp_grouper,
)
from samza_dagster.coordinator.model.job_model import ContainerModel, JobModel, TaskModel
from samza_dagster.coordinator.stream.reader_writer import close_admin
from samza_dagster.model import SystemStream, SystemStreamPartition
from samza_dagster.system.factories import system_factory
from samza_dagster.system.protocols import SystemAdmin


@dataclass(frozen=True)
class JobModelBuild:
    """The model and the changelog assignments it made that the stream does not hold yet
    (the coordinator writes them as set-changelog messages)."""

    model: JobModel
    new_changelog_partitions: dict[str, int]
    #: partition count of every stream the tasks were grouped on (side inputs excluded)
    input_partitions: dict[SystemStream, int]


def input_partition_counts(
    config: Config,
    streams: Iterable[SystemStream],
    admins: MutableMapping[str, SystemAdmin] | None = None,
) -> dict[SystemStream, int]:
    """Partition count of each stream: one batched metadata lookup per system.

    Admins missing from ``admins`` are made and, when ``admins`` is given, added to it, so a
    caller that rebuilds models (the JobCoordinator) reuses them and closes them once.
    Raises the system's StreamNotFoundError (naming the stream) for a stream that does not exist.
    """
    by_system: dict[str, list[str]] = {}
    for ss in streams:
        names = by_system.setdefault(ss.system, [])
        if ss.stream not in names:
            names.append(ss.stream)
    counts: dict[SystemStream, int] = {}
    for system, names in by_system.items():
        admin = None if admins is None else admins.get(system)
        owned = admin is None and admins is None
        if admin is None:
            admin = system_factory(config, system).get_admin(system, config)
            if admins is not None:
                admins[system] = admin
        try:
            metadata = admin.get_system_stream_metadata(names)
        finally:
            if owned:
                close_admin(admin)
        for name in names:
            counts[SystemStream(system, name)] = metadata[name].partition_count
    return counts


def input_ssps(
    input_streams: Mapping[SystemStream, int], exclude: Iterable[SystemStream] = ()
) -> list[SystemStreamPartition]:
    skip = set(exclude)
    return [
        SystemStreamPartition(ss.system, ss.stream, p)
        for ss, count in input_streams.items()
        if ss not in skip
        for p in range(count)
    ]


def build_job_model(
    config: Config,
    *,
    changelog_partitions: Mapping[str, int] | None = None,
    previous_hosts: Mapping[str, str] | None = None,
    input_streams: Mapping[SystemStream, int] | None = None,
    exclude: Iterable[SystemStream] = (),
    version: int = 1,
    admins: MutableMapping[str, SystemAdmin] | None = None,
) -> JobModelBuild:
    """Group the job's input partitions into tasks and the tasks into containers.

    ``input_streams`` (stream → partition count), when given, is the complete input set (the
    planner passes planned inputs, intermediate streams included); otherwise ``task.inputs`` is
    looked up through the system admins. Streams in ``exclude`` (side inputs) are not grouped.
    ``changelog_partitions`` is what the coordinator stream holds: existing tasks keep theirs.
    """
    job = JobConfig(config)
    exclude = tuple(exclude)
    if input_streams is None:
        input_streams = input_partition_counts(config, TaskConfig(config).inputs, admins)
    groups = ssp_grouper(job.grouper)(input_ssps(input_streams, exclude))
    existing = dict(changelog_partitions or {})
    changelog = assign_changelog_partitions(groups, existing)
    assignment = group_tasks_into_containers(groups, job.container_count)
    containers = {
        cid: ContainerModel(cid, {name: TaskModel(name, groups[name], changelog[name]) for name in names})
        for cid, names in assignment.items()
    }
    hosts = {cid: host for cid, host in (previous_hosts or {}).items() if cid in containers}
    model = JobModel(config=config, containers=containers, version=version, previous_hosts=hosts)
    new = {name: p for name, p in changelog.items() if existing.get(name) != p}
    skip = set(exclude)
    return JobModelBuild(model, new, {ss: count for ss, count in input_streams.items() if ss not in skip})
