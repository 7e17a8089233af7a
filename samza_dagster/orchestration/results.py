"""Reading a runner's JobResult without depending on its exact class: per-container summaries
(``ContainerSummary``), status, error — and the metadata Dagster shows from them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from samza_dagster.container.summary import ContainerStatus, ContainerSummary


def summaries(result: Any) -> list[ContainerSummary]:
    """The container summaries of a JobResult (a ``containers``/``summaries`` mapping or list),
    or the result itself when a runner returns one summary."""
    if isinstance(result, ContainerSummary):
        return [result]
    if isinstance(result, list | tuple):
        return [s for s in result if isinstance(s, ContainerSummary)]
    for name in ("containers", "summaries", "container_summaries"):
        value = getattr(result, name, None)
        if value is None:
            continue
        items: Iterable[Any] = value.values() if isinstance(value, dict) else value
        out = []
        for item in items:
            if isinstance(item, ContainerSummary):
                out.append(item)
            elif isinstance(item, dict):
                out.append(ContainerSummary.from_dict(item))
        return out
    return []


def failure(result: Any) -> str | None:
    """The error of a failed job (the first failed container's, naming it), else None."""
    error = getattr(result, "error", None)
    failed = [s for s in summaries(result) if s.status is ContainerStatus.FAILED]
    if failed:
        detail = "; ".join(f"container {s.container_id} failed: {s.error or 'no error message'}" for s in failed)
        return detail if not error or str(error) in detail else f"{error} ({detail})"
    if error:
        return str(error)
    if getattr(result, "ok", None) is False or getattr(result, "succeeded", None) is False:
        return "the job failed (no error message)"
    return None


def messages_per_stream(result: Any) -> dict[str, int]:
    """"system.stream" → envelopes processed, over all containers (and, for a JobResult, over
    every container run of a reconfigured job)."""
    own = getattr(result, "messages_per_stream", None)
    if isinstance(own, dict) and own:
        return dict(own)
    totals: dict[str, int] = {}
    for s in summaries(result):
        for stream, n in s.messages_per_stream.items():
            totals[stream] = totals.get(stream, 0) + n
    return totals


def final_offsets(result: Any) -> dict[tuple[str, int], str]:
    """("system.stream", partition) → offset of the last processed message (from the last
    checkpoint of every task)."""
    offsets: dict[tuple[str, int], str] = {}
    for s in summaries(result):
        for per_task in s.final_offsets.values():
            for where, offset in per_task.items():
                stream, _, rest = where.rpartition("[")
                try:
                    offsets[(stream, int(rest.rstrip("]")))] = offset
                except ValueError:
                    continue
    return offsets


def status(result: Any) -> str:
    states = sorted({s.status.value for s in summaries(result)})
    if states:
        return ",".join(states)
    return str(getattr(result, "status", "unknown"))


def elapsed_s(result: Any, fallback: float) -> float:
    value = getattr(result, "elapsed_s", None)
    if isinstance(value, int | float):
        return float(value)
    times = [s.elapsed_s for s in summaries(result)]
    return max(times) if times else fallback
