"""The job's own metrics — the containers' MetricsRegistry values, Samza's groups and names — as
Dagster shows them: the same numbers the snapshot stream and Prometheus carry, one source of truth.

Two places they come from: while a job runs, the latest snapshot of each container on the job's
metrics stream (when it configures a snapshot or Prometheus reporter; followed by the op); when
it ends, the registries' final values in the container summaries (always). Lag per input is the
sum of its partitions' ``messages-behind-high-watermark``; throughput is ``process-envelopes``
over time; ``process-ns`` is the containers' mean per-envelope processing time.

Counts are over the whole run: a reconfigured job's containers start again on the new JobModel
and count from 0, so what they counted before — the last snapshot of each earlier reporter
lifetime, or the earlier container runs' summaries — is added (``earlier``). Lag and process-ns
are the current containers' own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.metrics.config import metrics_config
from samza_dagster.metrics.groups import CONTAINER_GROUP, partition_metric
from samza_dagster.metrics.snapshot import MetricsSnapshot
from samza_dagster.metrics.stream_reader import MetricsStreamFollower
from samza_dagster.orchestration.observation import StreamObservation
from samza_dagster.runtime.result import JobResult

CONTAINER_PREFIX = "samza-container-"
LAG = "messages-behind-high-watermark"


@dataclass(frozen=True)
class JobMetrics:
    """The containers' registries: one ``group → name → value`` per container."""

    containers: tuple[Mapping[str, Mapping[str, Any]], ...]
    #: the same of containers a restart (a new JobModel) ended: their counts still count
    earlier: tuple[Mapping[str, Mapping[str, Any]], ...] = ()

    @classmethod
    def from_result(cls, result: JobResult) -> JobMetrics:
        return cls(_registries(result.summaries), _registries(result.earlier_summaries))

    @classmethod
    def from_follower(cls, follower: MetricsStreamFollower) -> JobMetrics:
        def containers(snapshots: Iterable[MetricsSnapshot]) -> tuple[Mapping[str, Mapping[str, Any]], ...]:
            return tuple(s.metrics for s in snapshots if s.header.source.startswith(CONTAINER_PREFIX))

        return cls(containers(follower.latest.snapshots()), containers(follower.latest.ended()))

    def __bool__(self) -> bool:
        return bool(self.containers)

    @property
    def process_envelopes(self) -> int:
        """Envelopes processed over the whole run, across container restarts."""
        return sum(
            int(c.get(CONTAINER_GROUP, {}).get("process-envelopes", 0) or 0) for c in (*self.earlier, *self.containers)
        )

    @property
    def process_ns(self) -> float:
        """Mean per-envelope processing time over the containers that processed any."""
        values = [
            float(c[CONTAINER_GROUP]["process-ns"])
            for c in self.containers
            if c.get(CONTAINER_GROUP, {}).get("process-ns")
        ]
        return round(sum(values) / len(values), 1) if values else 0.0

    def lag_per_input(self, inputs: Iterable[StreamObservation]) -> dict[str, int]:
        """stream id → messages behind the high watermark, summed over its partitions (inputs
        whose partitions no container reports are left out)."""
        behind: dict[str, int] = {}
        for container in self.containers:
            for values in container.values():
                for name, value in values.items():
                    if name.endswith(LAG) and isinstance(value, int):
                        behind[name] = value
        result: dict[str, int] = {}
        for obs in sorted(inputs, key=lambda o: o.stream_id):
            names = [partition_metric(obs.system, obs.physical_name, p, LAG) for p in obs.partitions]
            known = [behind[n] for n in names if n in behind]
            if known:
                result[obs.stream_id] = sum(known)
        return result


def _registries(summaries: Iterable[Any]) -> tuple[Mapping[str, Mapping[str, Any]], ...]:
    """The container registries a run's container summaries carry (``metrics["registry"]``)."""
    found = []
    for summary in summaries:
        registry = summary.metrics.get("registry") if isinstance(summary.metrics, dict) else None
        for source, groups in (registry or {}).items():
            if source.startswith(CONTAINER_PREFIX):
                found.append(groups)
    return tuple(found)


def follow_job_metrics(config: Config) -> MetricsStreamFollower | None:
    """A follower of the job's metrics stream (its first snapshot stream), started; None when the
    job configures no snapshot or Prometheus reporter."""
    streams = list(metrics_config(config).snapshot_streams)
    if not streams:
        return None
    follower = MetricsStreamFollower(config, streams[0])
    follower.start()
    return follower
