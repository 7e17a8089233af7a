"""Startpoints → offsets, through the systems' admins (Samza's startpoint visitors).

``oldest`` and ``upcoming`` come from the partition's metadata, ``specific`` is the offset given,
``timestamp`` is the admin's ``offsets_for_times`` (the earliest offset whose timestamp is at or
after it). A partition the stream does not have, or a timestamp no message is at or after, is a
:class:`StartpointError` naming the partition and the value — raised before any offset is
used, so nothing moves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from samza_dagster.model import SystemStream, SystemStreamMetadata, SystemStreamPartition
from samza_dagster.startpoint.startpoint import (
    Startpoint,
    StartpointError,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from samza_dagster.system.protocols import OffsetsForTimes


def format_timestamp(ms: int) -> str:
    """``1709251200000 (2024-03-01T00:00:00.000Z)``: for error messages."""
    when = datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    return f"{ms} ({when.replace('+00:00', 'Z')})"


def resolve_startpoints(
    startpoints: Mapping[SystemStreamPartition, Startpoint],
    admin_for: Callable[[str], Any],
    metadata: Mapping[SystemStream, SystemStreamMetadata] | None = None,
) -> dict[SystemStreamPartition, str]:
    """The starting offset of each partition. ``admin_for(system)`` gives the system's admin;
    ``metadata`` (optional) is reused instead of asking the admin again."""
    known: dict[SystemStream, SystemStreamMetadata] = dict(metadata or {})
    missing: dict[str, set[str]] = {}
    for ssp in startpoints:
        if SystemStream(ssp.system, ssp.stream) not in known:
            missing.setdefault(ssp.system, set()).add(ssp.stream)
    for system, streams in missing.items():
        for name, md in admin_for(system).get_system_stream_metadata(sorted(streams)).items():
            known[SystemStream(system, name)] = md
    result: dict[SystemStreamPartition, str] = {}
    by_time: dict[str, dict[SystemStreamPartition, int]] = {}
    for ssp, startpoint in sorted(startpoints.items()):
        md = known[SystemStream(ssp.system, ssp.stream)]
        pm = md.partitions.get(ssp.partition)
        if pm is None:
            raise StartpointError(
                f"startpoint {startpoint.describe()} for {ssp.system}.{ssp.stream}: the stream has no partition "
                f"{ssp.partition} (it has {len(md.partitions)})"
            )
        if isinstance(startpoint, StartpointOldest):
            result[ssp] = pm.oldest_offset
        elif isinstance(startpoint, StartpointUpcoming):
            result[ssp] = pm.upcoming_offset
        elif isinstance(startpoint, StartpointSpecific):
            result[ssp] = startpoint.offset
        elif isinstance(startpoint, StartpointTimestamp):
            by_time.setdefault(ssp.system, {})[ssp] = startpoint.timestamp
        else:  # pragma: no cover - the four kinds are all there is
            raise StartpointError(f"unknown startpoint {startpoint!r} for {ssp}")
    for system, timestamps in by_time.items():
        admin = admin_for(system)
        if not isinstance(admin, OffsetsForTimes):
            raise StartpointError(
                f"system {system!r} ({type(admin).__name__}) has no offsets_for_times: timestamp startpoints "
                f"cannot be resolved on it (for {', '.join(str(s) for s in sorted(timestamps))})"
            )
        found = admin.offsets_for_times(timestamps)
        for ssp, ts in sorted(timestamps.items()):
            offset = found.get(ssp)
            if offset is None:
                raise StartpointError(
                    f"startpoint timestamp {format_timestamp(ts)} for {ssp.system}.{ssp.stream} partition "
                    f"{ssp.partition}: no message at or after that time"
                )
            result[ssp] = offset
    return result
