"""Setting, listing and deleting a job's startpoints from outside the job: what the
``samza-dagster startpoint`` command and the Dagster rewind use.

Every startpoint is checked before the first is written — the stream must be one the job reads,
the partition one the stream has, an offset one the partition holds (oldest..upcoming), a
timestamp one some message is at or after — so a bad one moves no offset at all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.model import SystemStream, SystemStreamPartition, SystemStreamPartitionMetadata
from samza_dagster.planner import configured_plan
from samza_dagster.startpoint.manager import StartpointManager
from samza_dagster.startpoint.resolver import resolve_startpoints
from samza_dagster.startpoint.startpoint import (
    Startpoint,
    StartpointError,
    StartpointKey,
    StartpointSpecific,
)
from samza_dagster.system.factories import system_admin

log = logging.getLogger(__name__)


def job_input_streams(config: Config) -> dict[str, SystemStream]:
    """The streams the job's tasks read (``task.inputs``, or the plan's inputs of an
    application, intermediate streams included), by stream id and by ``system.stream``."""
    found: dict[str, SystemStream] = {}
    for info in configured_plan(config).streams.values():
        if "input" in info.roles:
            ss = SystemStream(info.system, info.physical_name)
            found[f"{info.system}.{info.physical_name}"] = ss
            found.setdefault(info.id, ss)
    return found


def input_stream(config: Config, name: str) -> SystemStream:
    """``name`` (``system.stream`` or a stream id) as one of the job's inputs; a StartpointError
    naming it and the inputs otherwise."""
    inputs = job_input_streams(config)
    found = inputs.get(name)
    if found is None and "." not in name:
        found = inputs.get(f"{JobConfig(config).default_system}.{name}")
    if found is None:
        readable = sorted({f"{ss.system}.{ss.stream}" for ss in inputs.values()})
        raise StartpointError(
            f"stream {name!r} is not an input of job {JobConfig(config).name}: a startpoint would never be applied "
            f"(its inputs: {', '.join(readable) or 'none'})"
        )
    return found


@dataclass(frozen=True)
class SetResult:
    #: partition → the offset the startpoint resolves to now
    offsets: dict[SystemStreamPartition, str]
    startpoint: Startpoint


def set_startpoints(
    config: Config, stream: str, startpoint: Startpoint, partitions: Iterable[int] | None = None
) -> SetResult:
    """Write ``startpoint`` for ``partitions`` of ``stream`` (every partition when None), after
    checking each one resolves. Returns what each resolves to now."""
    target = input_stream(config, stream)
    with system_admin(config, target.system) as admin:
        metadata = admin.get_system_stream_metadata([target.stream])[target.stream]
        wanted = sorted(metadata.partitions) if partitions is None else sorted(set(partitions))
        for p in wanted:
            if p not in metadata.partitions:
                raise StartpointError(
                    f"{target.system}.{target.stream} has no partition {p} (it has partitions 0..{len(metadata.partitions) - 1})"
                )
        ssps = [SystemStreamPartition(target.system, target.stream, p) for p in wanted]
        if isinstance(startpoint, StartpointSpecific):
            for ssp in ssps:
                _check_offset(admin, ssp, startpoint.offset, metadata.partitions[ssp.partition])
        offsets = resolve_startpoints(dict.fromkeys(ssps, startpoint), lambda _system: admin, {target: metadata})
    with StartpointManager(config) as manager:
        for ssp in ssps:
            manager.write_startpoint(ssp, startpoint)
    return SetResult(offsets, startpoint)


def _check_offset(admin: Any, ssp: SystemStreamPartition, offset: str, pm: SystemStreamPartitionMetadata) -> None:
    """A specific offset must be one the partition holds, or its upcoming one."""
    compare = admin.offset_comparator
    oldest, upcoming = pm.oldest_offset, pm.upcoming_offset
    try:
        inside = compare(oldest, offset) <= 0 and compare(offset, upcoming) <= 0
    except (TypeError, ValueError):
        raise StartpointError(f"offset {offset!r} is not an offset of {ssp.system}.{ssp.stream}") from None
    if not inside:
        raise StartpointError(
            f"offset {offset} is not in {ssp.system}.{ssp.stream} partition {ssp.partition} "
            f"(it holds {oldest}..{upcoming}, {upcoming} being the next to be written)"
        )


def _input_pairs(config: Config) -> list[tuple[str, str]]:
    """The job's inputs as (system, stream): what splits a startpoint key whose stream name
    holds a dot. None when the job cannot be planned — listing and deleting startpoints must not
    depend on the application's code importing (the keys are then split as written)."""
    try:
        return sorted({(ss.system, ss.stream) for ss in job_input_streams(config).values()})
    except Exception as exc:  # noqa: BLE001 - any failure of the application's planning
        log.debug("startpoint keys split without the job's inputs: its plan failed: %s", exc)
        return []


def list_startpoints(config: Config) -> dict[StartpointKey, Startpoint]:
    with StartpointManager(config) as manager:
        return manager.read_all(_input_pairs(config))


def delete_startpoints(
    config: Config, stream: str | None = None, partitions: Iterable[int] | None = None
) -> list[StartpointKey]:
    """Delete the startpoints (partition-level and fanned-out) of ``stream`` (every stream when
    None), of ``partitions`` only when given. Returns what was deleted."""
    wanted_partitions = None if partitions is None else set(partitions)
    target = None if stream is None else _named_stream(config, stream)
    hints = _input_pairs(config) + ([] if target is None else [(target.system, target.stream)])
    with StartpointManager(config) as manager:
        stored = manager.stored()
        doomed = sorted(
            key
            for key in stored.all(hints)
            if (target is None or (key.ssp.system, key.ssp.stream) == (target.system, target.stream))
            and (wanted_partitions is None or key.ssp.partition in wanted_partitions)
        )
        manager.delete_keys(doomed, stored)
    return doomed


def _named_stream(config: Config, name: str) -> SystemStream:
    """A stream to delete startpoints of: an input, else ``system.stream`` as written (the job
    may have stopped reading a stream whose startpoint is left over)."""
    try:
        return input_stream(config, name)
    except StartpointError:
        system, dot, stream = name.partition(".")
        if not dot:
            return SystemStream(JobConfig(config).default_system, name)
        return SystemStream(system, stream)
