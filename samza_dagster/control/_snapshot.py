"""Shared shape of the end-of-stream and watermark checkpoint snapshots.

Both are JSON-friendly dicts keyed by stream id (``"<system>.<stream>"``; a system name
holds no dot, since config keys ``systems.<name>.*`` could not name it, so the first dot
splits it):

    {"<system>.<stream>": {"totalTasks": <int>, "partitions": {"<partition>": {...}}}}

The per-partition body is Samza's EndOfStreamCheckpoint (``tasks``) or
WatermarkCheckpoint (``tasksToEventTime``), plus what a restore needs that the task set
alone cannot tell (``endOfStream`` / ``watermark``: a partition ended, or advanced, by a
system's own message, which names no task).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from samza_dagster.control.errors import ControlStateError
from samza_dagster.model import SystemStreamPartition


def stream_id(ssp: SystemStreamPartition) -> str:
    return f"{ssp.system}.{ssp.stream}"


def iter_partitions(data: Any, kind: str) -> Iterator[tuple[SystemStreamPartition, Mapping[str, Any]]]:
    """Yield (ssp, partition body) for every entry of a snapshot, validating its shape."""
    if not isinstance(data, Mapping):
        raise ControlStateError(f"{kind} snapshot must be a JSON object keyed by stream id, got {type(data).__name__}")
    for sid, entry in data.items():
        system, dot, stream = str(sid).partition(".")
        if not dot or not system or not stream:
            raise ControlStateError(f"{kind} snapshot: stream id {sid!r} is not '<system>.<stream>'")
        partitions = entry.get("partitions") if isinstance(entry, Mapping) else None
        if not isinstance(partitions, Mapping):
            raise ControlStateError(f"{kind} snapshot: stream {sid!r} has no 'partitions' object")
        for pkey, body in partitions.items():
            try:
                partition = int(pkey)
            except (TypeError, ValueError):
                raise ControlStateError(
                    f"{kind} snapshot: stream {sid!r} has partition key {pkey!r}, not an int"
                ) from None
            if not isinstance(body, Mapping):
                raise ControlStateError(f"{kind} snapshot: stream {sid!r} partition {partition} is not an object")
            yield SystemStreamPartition(system, stream, partition), body
