"""Reprocessing by rewinding: a daily-partitioned asset whose partition (a day) rewinds one of the
job's inputs to that day's first offset, by timestamp, through a startpoint.

Where :func:`~samza_dagster.orchestration.reprocessing_backfill` *re-sends* a day of a source
stream into the batch stream, this is Samza's other way: when the batch input itself still holds
the past (its retention covers it), materializing the partition ``2024-03-02`` writes a
``StartpointTimestamp`` of 2024-03-02T00:00 (in ``timezone``) for every partition of the stream;
at the job's next start each partition starts at the earliest offset whose timestamp is at or
after it, ahead of its checkpoint, and reads on from there. Usage::

    backfill = rewind_backfill("user_classification", CONFIG_PATH, stream="reclassify_requests",
                               start_date="2024-01-01")
    application_definitions("user_classification", CONFIG_PATH, backfills=[backfill])

A backfill over several days launches one run per day; each run keeps an earlier pending rewind
of the same partition (a rewind never moves a pending one forward), so the job starts at the
range's first day whatever order the runs finish in. A partition with nothing at or after the day
starts at its upcoming offset; a day no message of any partition is at or after fails the run
naming the time, and moves no offset.
"""

# no "from __future__ import annotations": Dagster reads the context annotation at definition time

from pathlib import Path

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.model import SystemStreamPartition
from samza_dagster.orchestration.assets import _group_name, stream_key
from samza_dagster.orchestration.backfill import ReprocessingBackfill, _stream
from samza_dagster.orchestration.errors import OrchestrationError
from samza_dagster.orchestration.resources import SamzaSystemsResource
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.planner import configured_plan
from samza_dagster.runtime.startpoints import input_stream, list_startpoints, set_startpoints
from samza_dagster.startpoint.resolver import format_timestamp, resolve_startpoints
from samza_dagster.startpoint.startpoint import Startpoint, StartpointError, StartpointSpecific, StartpointTimestamp
from samza_dagster.system.factories import system_admin


class NothingToRewind(StartpointError):
    """No partition of the stream has a message at or after the time: there is nothing to read
    again (a quiet day), and no startpoint was written."""


def rewind_to_time(config: Config, stream: str, timestamp_ms: int) -> dict[SystemStreamPartition, str]:
    """Rewind every partition of ``stream`` (an input of the job) to its earliest offset whose
    timestamp is at or after ``timestamp_ms``, by startpoints applied at the job's next start.

    A partition already holding an earlier pending timestamp startpoint keeps it. A partition
    with no message at or after the time (a quiet one) starts at its upcoming offset as of now —
    what arrives later is read, nothing before the time is. StartpointError, with nothing
    written, when no partition has a message at or after the time. Returns the offset each
    partition will start at (as resolved now)."""
    target = input_stream(config, stream)
    pending = {
        key.ssp: sp
        for key, sp in list_startpoints(config).items()
        if key.task_name is None and (key.ssp.system, key.ssp.stream) == (target.system, target.stream)
    }
    with system_admin(config, target.system) as admin:
        partitions = admin.get_system_stream_metadata([target.stream])[target.stream].partitions
        ssps = [SystemStreamPartition(target.system, target.stream, p) for p in sorted(partitions)]
        found = admin.offsets_for_times(dict.fromkeys(ssps, timestamp_ms))
    if all(found[ssp] is None for ssp in ssps):
        raise NothingToRewind(
            f"no message of {target.system}.{target.stream} (partitions {', '.join(str(s.partition) for s in ssps)}) "
            f"is at or after {format_timestamp(timestamp_ms)}"
        )
    rewind = StartpointTimestamp(timestamp_ms)
    by_kind: dict[Startpoint, list[int]] = {}
    for ssp in ssps:
        mine = pending.get(ssp)
        if isinstance(mine, StartpointTimestamp) and mine.timestamp <= timestamp_ms:
            continue  # an earlier rewind is waiting: keep it
        startpoint: Startpoint = (
            rewind if found[ssp] is not None else StartpointSpecific(partitions[ssp.partition].upcoming_offset)
        )
        by_kind.setdefault(startpoint, []).append(ssp.partition)
    for startpoint, parts in by_kind.items():
        set_startpoints(config, stream, startpoint, parts)
    current = {
        key.ssp: sp for key, sp in list_startpoints(config).items() if key.task_name is None and key.ssp in set(ssps)
    }
    with system_admin(config, target.system) as admin:
        return resolve_startpoints(current, lambda _system: admin)


def rewind_backfill(
    application: str,
    config: Config | str | Path,
    *,
    stream: str,
    start_date: str,
    end_date: str | None = None,
    timezone: str = "UTC",
    name: str | None = None,
) -> ReprocessingBackfill:
    """A daily-partitioned asset rewinding ``stream`` (an input of the job: a stream id or
    ``system.stream``) to the first offset of the partition's day, its job and a daily schedule
    (STOPPED). See the module docstring."""
    cfg = config if isinstance(config, Config) else Config.from_properties(config)
    plan = configured_plan(cfg)
    info = _stream(cfg, plan.streams, stream, "stream")
    if "input" not in info.roles:
        raise OrchestrationError(
            f"rewind_backfill: stream {stream!r} ({info.system}.{info.physical_name}) is not an input of job "
            f"{plan.job_name}: a startpoint for it would never be applied"
        )
    partitions_def = dg.DailyPartitionsDefinition(start_date=start_date, end_date=end_date, timezone=timezone)
    group = _group_name(application)
    asset_name = name or f"rewind_{_group_name(info.id)}"
    where = f"{info.system}.{info.physical_name}"

    @dg.asset(
        key=dg.AssetKey([application, asset_name]),
        deps=[stream_key(application, info.id)],
        partitions_def=partitions_def,
        group_name=f"{group}_reprocessing",
        kinds={"samza"},
        description=(
            f"Rewinds {where} to the first offset of the day (by timestamp): job {plan.job_name} "
            "reads it again from there at its next start"
        ),
        metadata={"stream": where},
        tags={"samza/role": "backfill"},
        owners=list(DagsterSettings.from_config(cfg).owners) or None,
    )
    def _rewind(context: dg.AssetExecutionContext, samza_systems: SamzaSystemsResource) -> dg.MaterializeResult:
        window = context.partition_time_window
        start_ms = int(window.start.timestamp() * 1000)
        job_cfg = samza_systems.apply(cfg)
        try:
            offsets = rewind_to_time(job_cfg, f"{info.system}.{info.physical_name}", start_ms)
        except NothingToRewind as exc:
            context.log.info(
                f"nothing to reprocess for {window.start.date().isoformat()}: {exc}; no startpoint written"
            )
            return dg.MaterializeResult(
                metadata={
                    "rewind_to": dg.MetadataValue.timestamp(window.start),
                    "nothing_to_reprocess": True,
                    "reason": str(exc),
                }
            )
        except StartpointError as exc:
            raise dg.Failure(description=f"cannot rewind {where} to {window.start.isoformat()}: {exc}") from exc
        context.log.info(
            f"{where} rewound to {window.start.isoformat()}: starting offsets {_by_partition(offsets)}, "
            f"applied at job {plan.job_name}'s next start"
        )
        return dg.MaterializeResult(
            metadata={
                "rewind_to": dg.MetadataValue.timestamp(window.start),
                "nothing_to_reprocess": False,
                "starting_offsets": dg.MetadataValue.json(_by_partition(offsets)),
            }
        )

    return ReprocessingBackfill.of(
        application,
        info,
        info,
        _rewind,
        partitions_def,
        job_name=f"{group}_{asset_name}",
        description=f"Rewinds {info.id} to a past day's first offset",
    )


def _by_partition(offsets: dict[SystemStreamPartition, str]) -> dict[str, str]:
    return {str(ssp.partition): offset for ssp, offset in sorted(offsets.items())}


__all__ = ["rewind_backfill", "rewind_to_time"]
