"""Bootstrap progress of a running job, as the Dagster op reports it.

Two sources, because neither alone answers both "how far is it now" and "when did it get there":

* **while the job runs** — the job's checkpoints. A bootstrap stream's progress is the messages
  at or before the checkpointed offset of each partition, against the messages the stream held
  when the run started (its *start-time head*, what the BootstrappingChooser holds the job to).
  Checkpoints are written every ``task.commit.ms``, so this lags the container by at most that.
* **when the job stopped** — the container summaries' chooser metrics
  (``metrics["system-consumers"]["chooser"]["bootstrap"]["streams"]["system.stream"]``: ``caught_up``,
  ``time_to_head_s``, ``messages_behind``, ``lagging_partitions``; see
  ``samza_dagster.system.chooser.bootstrapping``). Over several containers a stream reached head
  when it did in every container that reads it, and its time to head is the slowest one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.model import SystemStreamPartition
from samza_dagster.orchestration import results
from samza_dagster.orchestration.metadata import Metadata
from samza_dagster.orchestration.observation import StreamObservation, checkpointed_offsets, offset_int
from samza_dagster.runtime.result import JobResult


@dataclass(frozen=True)
class BootstrapProgress:
    """One bootstrap stream, now: messages processed of those there were at the start."""

    stream: str  # "system.stream"
    done: int
    total: int

    @property
    def at_head(self) -> bool:
        return self.done >= self.total

    @property
    def fraction(self) -> float:
        return round(self.done / self.total, 4) if self.total else 1.0

    def line(self) -> str:
        state = "at its head" if self.at_head else f"{self.fraction:.0%}"
        return f"bootstrap {self.stream} {self.done}/{self.total} ({state})"


def live_progress(config: Config, bootstrap: Iterable[StreamObservation]) -> list[BootstrapProgress]:
    """Progress of each bootstrap stream from the job's latest checkpoints (empty when the job
    has not checkpointed yet)."""
    streams = list(bootstrap)
    if not streams:
        return []
    processed = checkpointed_offsets(config) or {}
    return [_progress(obs, processed) for obs in streams]


def _progress(obs: StreamObservation, processed: Mapping[SystemStreamPartition, str]) -> BootstrapProgress:
    done = total = 0
    for p, m in obs.partitions.items():
        oldest, head = offset_int(m.oldest_offset), offset_int(m.upcoming_offset)
        total += head - oldest
        checkpoint = processed.get(SystemStreamPartition(obs.system, obs.physical_name, p))
        if checkpoint is not None:
            done += max(0, min(offset_int(checkpoint) + 1, head) - oldest)
    return BootstrapProgress(f"{obs.system}.{obs.physical_name}", done, total)


@dataclass(frozen=True, slots=True)
class BootstrapOutcome:
    """How one bootstrap stream ended, over every container that read it: it reached its head when
    it did in each of them, its time to head is the slowest one's, and what is still behind is the
    sum (unknown when one container did not say)."""

    caught_up: bool = True
    #: seconds to reach the head; None when it was at its head when the job started
    time_to_head_s: float | None = None
    messages_behind: int | None = 0

    def merged(self, entry: Mapping[str, object]) -> BootstrapOutcome:
        """This outcome with one more container's chooser snapshot of the stream folded in."""
        took = entry.get("time_to_head_s")
        behind = entry.get("messages_behind")
        return BootstrapOutcome(
            caught_up=self.caught_up and bool(entry.get("caught_up")),
            time_to_head_s=max(took, self.time_to_head_s or 0.0)
            if isinstance(took, int | float)
            else self.time_to_head_s,
            messages_behind=(
                None
                if not isinstance(behind, int | float) or self.messages_behind is None
                else self.messages_behind + int(behind)
            ),
        )

    def as_json(self) -> dict[str, object]:
        """The stream's entry of the run's ``bootstrap`` metadata (the chooser's own names)."""
        return {
            "caught_up": self.caught_up,
            "time_to_head_s": self.time_to_head_s,
            "messages_behind": self.messages_behind,
        }

    def metadata(self) -> Metadata:
        """What the stream's observation after the run says of its bootstrap."""
        md: Metadata = {"bootstrap_reached_head": self.caught_up}
        if self.time_to_head_s is not None:
            md["bootstrap_time_to_head_s"] = dg.MetadataValue.float(round(float(self.time_to_head_s), 3))
        if self.messages_behind is not None:
            md["bootstrap_messages_behind"] = dg.MetadataValue.int(int(self.messages_behind))
        return md

    def line(self, job_name: str, stream: str) -> str:
        """The run log's line for the stream when the job has stopped."""
        if self.caught_up:
            took = self.time_to_head_s
            when = f" in {took:.3f} s" if took is not None else " (it was at head when the job started)"
            return f"job {job_name}: bootstrap stream {stream} reached its head{when}"
        behind = self.messages_behind
        return f"job {job_name}: bootstrap stream {stream} did not reach its head ({behind if behind is not None else '?'} messages behind)"


def final_bootstrap(result: JobResult) -> dict[str, BootstrapOutcome]:
    """ "system.stream" → its :class:`BootstrapOutcome`, merged over the containers' chooser
    metrics (empty when no container had a bootstrap stream)."""
    merged: dict[str, BootstrapOutcome] = {}
    for summary in results.summaries(result):
        boot = _chooser_bootstrap(summary.metrics)
        streams = boot.get("streams") if isinstance(boot, dict) else None
        for name, entry in (streams or {}).items():
            merged[name] = merged.get(name, BootstrapOutcome()).merged(entry)
    return merged


def _chooser_bootstrap(metrics: object) -> object:
    """The chooser's bootstrap snapshot: SystemConsumers nests the chooser's metrics in its own
    (``metrics["system-consumers"]["chooser"]``); a container may also report it at the top."""
    if not isinstance(metrics, dict):
        return None
    consumers = metrics.get("system-consumers")
    chooser = consumers.get("chooser") if isinstance(consumers, dict) else metrics.get("chooser")
    return chooser.get("bootstrap") if isinstance(chooser, dict) else None
