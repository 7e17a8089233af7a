"""What a run of a Samza job reports to Dagster, as typed records and the metadata made from them.

The op of :mod:`.job_asset` runs the job; when it stops, this module turns the runner's
:class:`~samza_dagster.runtime.result.JobResult` and the supervisor's
:class:`~.supervision.Supervision` into a :class:`JobReport` — status, time, counts, metrics,
bootstrap outcomes — whose :meth:`JobReport.metadata` goes on every written stream's
materialization. The per-stream metadata (messages written since the run started, an input's
progress) is built here too, for the final materialization and for the live ones
(:mod:`.live`) alike, so both say the same thing under the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import dagster as dg

from samza_dagster.orchestration import results
from samza_dagster.orchestration.bootstrap import BootstrapOutcome, final_bootstrap
from samza_dagster.orchestration.job_metrics import JobMetrics
from samza_dagster.orchestration.metadata import Metadata
from samza_dagster.orchestration.observation import StreamObservation, offset_int
from samza_dagster.orchestration.supervision import Supervision
from samza_dagster.orchestration.tables import RunCommits, run_commits
from samza_dagster.runtime.result import JobResult


@dataclass(frozen=True, slots=True)
class RunnerStart:
    """How the run's runner was made: a Spark job says whether it reused the Dagster process's
    Spark session or started one (and how long that took) — the first run of a process pays the
    start-up, later ones do not, and a reader of a slow run wants to know which it was."""

    #: "reused" or "started by this run"; None for a runner without a Spark session
    spark_session: str | None = None
    spark_startup_s: float | None = None

    def metadata(self) -> Metadata:
        md: Metadata = {}
        if self.spark_session is not None:
            md["spark_session"] = self.spark_session
        if self.spark_startup_s is not None:
            md["spark_startup_s"] = dg.MetadataValue.float(round(self.spark_startup_s, 3))
        return md


@dataclass(frozen=True, slots=True)
class JobReport:
    """The run of one Samza job as its materializations report it (the same on every written
    stream): what the containers ended as, how long it took, what they processed, why it stopped,
    which JobModels it moved to, the containers' final metrics and each bootstrap stream's end."""

    status: str
    elapsed_s: float
    #: "system.stream" → envelopes processed over every container run of the job
    processed: Mapping[str, int]
    runner: str
    runner_start: RunnerStart = RunnerStart()
    stopped_by: str | None = None
    #: (JobModel version, keys that changed) of every model the job moved to while it ran
    model_changes: tuple[tuple[int, tuple[str, ...]], ...] = ()
    metrics: JobMetrics = field(default_factory=lambda: JobMetrics(()))
    #: the Spark session's start-up when the spark runner itself started it
    spark_startup_s: float | None = None
    #: "system.stream" → outcome, for the streams configured as bootstrap streams only
    bootstrap: Mapping[str, BootstrapOutcome] = field(default_factory=dict)
    #: Iceberg table name → the commits the run's containers made to it (for its materialization)
    table_commits: Mapping[str, RunCommits] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        result: JobResult,
        outcome: Supervision,
        *,
        runner: str,
        runner_start: RunnerStart,
        bootstrap_streams: set[str],
        wall_s: float,
    ) -> JobReport:
        """The report of a finished run. ``bootstrap_streams`` ("system.stream") are the inputs
        configured ``samza.bootstrap``: the chooser also holds real-time streams to their
        start-time head (the restart guarantee) and reports them beside the bootstrap streams,
        but only a bootstrap stream is reported as one. ``wall_s`` is the op's own measure of
        the run, for a result that carries no time."""
        return cls(
            status=results.status(result),
            elapsed_s=results.elapsed_s(result, wall_s),
            processed=results.messages_per_stream(result),
            runner=runner,
            runner_start=runner_start,
            stopped_by=outcome.stopped_by,
            model_changes=tuple((v, tuple(changed)) for v, changed in outcome.model_changes),
            metrics=JobMetrics.from_result(result),
            spark_startup_s=results.spark_startup_s(result),
            bootstrap={n: e for n, e in final_bootstrap(result).items() if n in bootstrap_streams},
            table_commits=run_commits(s.metrics for s in (*result.earlier_summaries, *result.summaries)),
        )

    @property
    def messages_processed(self) -> int:
        return sum(self.processed.values())

    def metadata(self) -> Metadata:
        """The job's part of every written stream's materialization."""
        md: Metadata = {
            "job_status": self.status,
            "job_elapsed_s": dg.MetadataValue.float(round(self.elapsed_s, 3)),
            "messages_processed": dg.MetadataValue.int(self.messages_processed),
            "messages_processed_per_stream": dg.MetadataValue.json(dict(self.processed)),
            "runner": self.runner,
            **self.runner_start.metadata(),
        }
        if self.stopped_by:
            md["stopped_by"] = self.stopped_by
        if self.model_changes:
            md["job_model_changes"] = dg.MetadataValue.json(
                [{"version": v, "changed": list(changed)} for v, changed in self.model_changes]
            )
        if self.metrics:
            md.update(metrics_metadata(self.metrics))
            md["process_envelopes_per_s"] = dg.MetadataValue.float(
                round(self.metrics.process_envelopes / self.elapsed_s, 1) if self.elapsed_s > 0 else 0.0
            )
        if self.spark_startup_s is not None:
            md["spark_startup_s"] = dg.MetadataValue.float(round(self.spark_startup_s, 3))
        if self.bootstrap:
            md["bootstrap"] = dg.MetadataValue.json({name: e.as_json() for name, e in self.bootstrap.items()})
        return md

    def line(self, job_name: str) -> str:
        """The run log's last line about the job."""
        return (
            f"job {job_name} {self.status} in {self.elapsed_s:.2f} s: {self.messages_processed} messages processed"
            + (f" ({self.stopped_by})" if self.stopped_by else "")
        )


def metrics_metadata(metrics: JobMetrics) -> Metadata:
    """The containers' metrics Dagster plots across materializations (Samza's names)."""
    return {
        "process_envelopes": dg.MetadataValue.int(metrics.process_envelopes),
        "process_ns": dg.MetadataValue.float(metrics.process_ns),
    }


@dataclass(frozen=True, slots=True)
class WrittenSince:
    """What a written stream gained since the run started: its partitions and messages now, and
    per partition the upcoming offset and the messages written — the materialization's numbers."""

    partitions: int
    messages: int
    #: (partition, its upcoming offset now, messages written to it since the start), by partition
    per_partition: tuple[tuple[int, int, int], ...]

    @classmethod
    def of(cls, before: StreamObservation, after: StreamObservation) -> WrittenSince:
        start = before.upcoming()
        return cls(
            partitions=len(after.partitions),
            messages=after.messages,
            per_partition=tuple(
                (p, upcoming, upcoming - start.get(p, 0)) for p, upcoming in sorted(after.upcoming().items())
            ),
        )

    @property
    def total(self) -> int:
        return sum(written for _, _, written in self.per_partition)

    def metadata(self) -> Metadata:
        md: Metadata = {
            "partitions": dg.MetadataValue.int(self.partitions),
            "messages": dg.MetadataValue.int(self.messages),
        }
        for p, upcoming, written in self.per_partition:
            md[f"partition_{p}_upcoming_offset"] = dg.MetadataValue.int(upcoming)
            md[f"partition_{p}_messages_written"] = dg.MetadataValue.int(written)
        md["messages_written"] = dg.MetadataValue.int(self.total)
        return md


def input_metadata(
    obs: StreamObservation,
    report: JobReport,
    finals: Mapping[tuple[str, int], str],
    *,
    bootstrap: bool,
    lag: int | None,
    after: StreamObservation | None = None,
) -> Metadata:
    """An input's observation after the run: the messages of the stream this run processed and,
    against the messages there were when it started, how far it got (a bootstrap stream's
    progress, and how its bootstrap ended), and its lag now. ``checkpointed_through`` counts the
    messages up to the final checkpoint in the stream as it is after the run (``after``): an
    unbounded job processes messages that arrived while it ran, and capping the count at the
    messages there were at the start read as if those were not committed."""
    name = f"{obs.system}.{obs.physical_name}"
    now = {p: offset_int(m.upcoming_offset) for p, m in after.partitions.items()} if after is not None else {}
    available = caught_up = checkpointed = 0
    for p, m in obs.partitions.items():
        oldest, upcoming = offset_int(m.oldest_offset), offset_int(m.upcoming_offset)
        available += upcoming - oldest
        done = finals.get((name, p))
        if done is not None:
            caught_up += max(0, min(offset_int(done) + 1, upcoming) - oldest)
            checkpointed += max(0, min(offset_int(done) + 1, max(upcoming, now.get(p, upcoming))) - oldest)
    md: Metadata = {
        "processed_by_run": dg.MetadataValue.int(report.processed.get(name, 0)),
        "messages_at_start": dg.MetadataValue.int(available),
        "checkpointed_through": dg.MetadataValue.int(checkpointed),
    }
    if after is not None:
        at_end = sum(offset_int(m.upcoming_offset) - offset_int(m.oldest_offset) for m in after.partitions.values())
        md["messages_at_end"] = dg.MetadataValue.int(at_end)
    md["bootstrap_progress" if bootstrap else "progress"] = dg.MetadataValue.float(
        round(caught_up / available, 4) if available else 1.0
    )
    outcome = report.bootstrap.get(name)
    if outcome is not None:
        md.update(outcome.metadata())
    if lag is not None:
        md["lag"] = dg.MetadataValue.int(lag)
    return md
