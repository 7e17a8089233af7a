"""JobResult: what every runner returns — one ContainerSummary per container."""

from __future__ import annotations

from dataclasses import dataclass, field

from samza_dagster.container.summary import ContainerSummary


def per_second(n: float, seconds: float) -> str:
    """A rate a person reads: ``12,345/s``, ``4.5/s``, ``0.067/s`` — never ``0/s`` for a job
    that did process something slowly."""
    rate = n / seconds if seconds > 0 else 0.0
    if rate == 0 or rate >= 100:
        return f"{rate:,.0f}/s"
    if rate >= 1:
        return f"{rate:.1f}/s"
    return f"{rate:.2g}/s"


@dataclass
class JobResult:
    job_name: str
    runner: str
    summaries: list[ContainerSummary] = field(default_factory=list)
    elapsed_s: float = 0.0
    model_version: int = 0
    #: container runs (1 + restarts for new JobModels)
    runs: int = 0
    error: str | None = None
    failed_container: str | None = None
    #: summaries of the container runs before the latest JobModel (a reconfigured job restarts
    #: its containers; what they processed before still counts)
    earlier_summaries: list[ContainerSummary] = field(default_factory=list)
    #: the signal (``"SIGINT"``, ``"SIGTERM"``) that stopped the job gracefully, if one did
    stopped_by: str | None = None

    def record_run(self, summaries: list[ContainerSummary]) -> None:
        """The summaries of the latest container run; the previous run's become earlier ones."""
        self.earlier_summaries.extend(self.summaries)
        self.summaries = summaries

    @property
    def containers(self) -> dict[str, ContainerSummary]:
        return {s.container_id: s for s in self.summaries}

    @property
    def succeeded(self) -> bool:
        return self.error is None and all(s.ok for s in self.summaries)

    ok = succeeded

    @property
    def messages_per_stream(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for s in (*self.earlier_summaries, *self.summaries):
            for stream, n in s.messages_per_stream.items():
                total[stream] = total.get(stream, 0) + n
        return total

    @property
    def messages_processed(self) -> int:
        return sum(self.messages_per_stream.values())

    def summary_line(self) -> str:
        if self.error is not None:
            return f"job {self.job_name} failed (container {self.failed_container}): {self.error}"
        statuses = ",".join(sorted({s.status.value for s in self.summaries})) or "none"
        stopped = f"; stopped by {self.stopped_by}, everything processed committed" if self.stopped_by else ""
        containers = "1 container" if len(self.summaries) == 1 else f"{len(self.summaries)} containers"
        messages = "1 message" if self.messages_processed == 1 else f"{self.messages_processed:,} messages"
        return (
            f"job {self.job_name} on {self.runner}: {containers} {statuses}, "
            f"{messages} in {self.elapsed_s:.2f} s ({per_second(self.messages_processed, self.elapsed_s)}){stopped}"
        )

    def _set_failure(self) -> None:
        for s in self.summaries:
            if not s.ok and self.error is None:
                self.error = s.error or "failed (no error message)"
                self.failed_container = s.container_id
