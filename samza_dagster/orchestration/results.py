"""What Dagster shows of a runner's :class:`~samza_dagster.runtime.JobResult`: status, error,
messages per stream, final offsets — read through the result's own fields."""

from __future__ import annotations

from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.runtime.result import JobResult
from samza_dagster.runtime.spark_runner import SparkJobResult


def summaries(result: JobResult) -> list[ContainerSummary]:
    """The summaries of the latest container run (a reconfigured job's earlier runs are in
    ``earlier_summaries``; their processed counts still count in :func:`messages_per_stream`)."""
    return list(result.summaries)


def failure(result: JobResult) -> str | None:
    """The error of a failed job (the failed containers' errors, naming them), else None."""
    failed = [s for s in result.summaries if s.status is ContainerStatus.FAILED]
    if failed:
        detail = "; ".join(f"container {s.container_id} failed: {s.error or 'no error message'}" for s in failed)
        error = result.error
        return detail if not error or error in detail else f"{error} ({detail})"
    if result.error:
        return result.error
    return None


def messages_per_stream(result: JobResult) -> dict[str, int]:
    """ "system.stream" → envelopes processed, over every container run of the job."""
    return result.messages_per_stream


def final_offsets(result: JobResult) -> dict[tuple[str, int], str]:
    """("system.stream", partition) → offset of the last processed message (from the last
    checkpoint of every task of the latest container run)."""
    offsets: dict[tuple[str, int], str] = {}
    for s in result.summaries:
        for per_task in s.final_offsets.values():
            for where, offset in per_task.items():
                stream, _, rest = where.rpartition("[")
                try:
                    offsets[(stream, int(rest.rstrip("]")))] = offset
                except ValueError:
                    continue
    return offsets


def status(result: JobResult) -> str:
    """The containers' statuses (``completed``, ``stopped``, ``failed``), comma-separated."""
    states = sorted({s.status.value for s in result.summaries})
    return ",".join(states) if states else ("failed" if result.error else "no containers")


def elapsed_s(result: JobResult, fallback: float) -> float:
    if result.elapsed_s > 0:
        return result.elapsed_s
    times = [s.elapsed_s for s in result.summaries]
    return max(times) if times else fallback


def spark_startup_s(result: JobResult) -> float | None:
    """The Spark session's start-up time when this run started it (the spark runner's result)."""
    if isinstance(result, SparkJobResult) and result.spark_startup_s > 0:
        return result.spark_startup_s
    return None
