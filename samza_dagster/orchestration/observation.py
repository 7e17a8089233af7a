"""Observing streams: offsets of every partition (one batched admin call per system) and the
job's lag behind them (from its checkpoints).

An observation's data version is the newest offset of every partition, so Dagster sees a new
version exactly when new messages arrived.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from samza_dagster.checkpoint.manager import CheckpointManager, checkpoint_system
from samza_dagster.config import Config, keys
from samza_dagster.model import SystemStreamPartition, SystemStreamPartitionMetadata
from samza_dagster.orchestration.metadata import Metadata
from samza_dagster.planner.admins import fetch_metadata as fetch_stream_metadata  # the planner's batched lookup
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.factories import system_admin, system_factory

log = logging.getLogger(__name__)

DATA_VERSION_TAG = "dagster/data_version"


@dataclass
class StreamObservation:
    stream_id: str
    system: str
    physical_name: str
    exists: bool
    partitions: dict[int, SystemStreamPartitionMetadata] = field(default_factory=dict)
    #: partition → messages after the job's checkpoint (None: no lag known for this stream)
    lag: dict[int, int] | None = None

    @property
    def data_version(self) -> str:
        if not self.exists:
            return "missing"
        return ",".join(
            f"{p}:{m.newest_offset if m.newest_offset is not None else '-'}" for p, m in sorted(self.partitions.items())
        )

    @property
    def messages(self) -> int:
        """Messages currently retained (upcoming − oldest, summed)."""
        return sum(offset_int(m.upcoming_offset) - offset_int(m.oldest_offset) for m in self.partitions.values())

    def upcoming(self) -> dict[int, int]:
        return {p: offset_int(m.upcoming_offset) for p, m in self.partitions.items()}

    def metadata(self) -> Metadata:
        md: Metadata = {
            "exists": self.exists,
            "partitions": dg.MetadataValue.int(len(self.partitions)),
            "messages": dg.MetadataValue.int(self.messages),
            "newest_offsets": dg.MetadataValue.json(
                {str(p): m.newest_offset for p, m in sorted(self.partitions.items())}
            ),
        }
        for p, m in sorted(self.partitions.items()):
            md[f"partition_{p}_upcoming_offset"] = dg.MetadataValue.int(offset_int(m.upcoming_offset))
        if self.lag is not None:
            md["lag"] = dg.MetadataValue.int(sum(self.lag.values()))
            md["lag_per_partition"] = dg.MetadataValue.json({str(p): n for p, n in sorted(self.lag.items())})
        return md

    def to_event(self, key: dg.AssetKey, description: str | None = None) -> dg.AssetObservation:
        return dg.AssetObservation(
            asset_key=key, description=description, metadata=self.metadata(), tags={DATA_VERSION_TAG: self.data_version}
        )


def observe_streams(
    config: Config, streams: Iterable[StreamInfo], *, with_lag: bool = True
) -> dict[str, StreamObservation]:
    """stream id → observation. One ``get_system_stream_metadata`` per system for all its
    streams; a stream that does not exist yet is observed as missing, not an error (an output is
    created by the job). An unreachable system raises its ``SystemUnavailableError``."""
    by_system: dict[str, list[StreamInfo]] = {}
    side_inputs: set[str] = set()
    for stream in streams:
        by_system.setdefault(stream.system, []).append(stream)
        if stream.role == "side-input":
            side_inputs.add(stream.id)
    result: dict[str, StreamObservation] = {}
    for system, infos in by_system.items():
        metadata = fetch_metadata(config, system, [s.physical_name for s in infos])
        for info in infos:
            md = metadata.get(info.physical_name)
            result[info.id] = StreamObservation(
                info.id, system, info.physical_name, md is not None, dict(md.partitions) if md is not None else {}
            )
    if with_lag:
        processed = checkpointed_offsets(config)
        if processed is not None:
            for sid, obs in result.items():
                # a side input fills a table from its own offsets, not through checkpoints:
                # the job never "processes" it, so it has no consumer lag
                if sid not in side_inputs:
                    obs.lag = _lag(obs, processed)
    return result


def fetch_metadata(config: Config, system: str, names: list[str]) -> dict[str, Any]:
    """One batched metadata call for ``names`` (the planner's, which asks again without a
    stream the admin reports missing, so the others are still answered)."""
    with system_admin(config, system) as admin:
        return fetch_stream_metadata(admin, system, list(dict.fromkeys(names)))


def checkpointed_offsets(config: Config) -> dict[SystemStreamPartition, str] | None:
    """Offset of the last processed message of every checkpointed input partition; None when
    the job has no checkpoint stream (it never ran) — then lag is not reported."""
    system = checkpoint_system(config)
    factory = system_factory(config, system)
    with system_admin(config, system) as admin:
        manager = CheckpointManager(config, admin, None, lambda: factory.get_consumer(system, config))
        try:
            checkpoints = manager.read_last(committed_so_far=True)
        except StreamNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - an observation must not fail on a bad checkpoint
            log.warning("cannot read the checkpoints of job %s: %s", keys.JOB_NAME.get(config), exc)
            return None
    offsets: dict[SystemStreamPartition, str] = {}
    for checkpoint in checkpoints.values():
        offsets.update(checkpoint.offsets)
    return offsets


def _lag(obs: StreamObservation, processed: Mapping[SystemStreamPartition, str]) -> dict[int, int] | None:
    lag: dict[int, int] = {}
    for p, m in obs.partitions.items():
        done = processed.get(SystemStreamPartition(obs.system, obs.physical_name, p))
        start = offset_int(done) + 1 if done is not None else offset_int(m.oldest_offset)
        lag[p] = max(0, offset_int(m.upcoming_offset) - start)
    return lag


def offset_int(offset: str | None) -> int:
    try:
        return int(offset) if offset is not None else 0
    except ValueError:  # a system with non-integer offsets: no arithmetic on them
        return 0
