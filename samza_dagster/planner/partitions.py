"""Phase 3 of the partition-count calculation of Samza's ExecutionPlanner: processing the joined stream groups.

A group holds the streams of one join. Groups with a known count (an input or side-input
stream, or an intermediate stream already assigned) give that count to their unassigned
intermediate streams; since an intermediate stream can sit in several groups, each
assignment re-queues the other groups of that stream, until nothing changes (a worklist, so
a chain of groups is settled in linear time). Intermediate streams still unassigned get the
default: ``job.intermediate.stream.partitions``, else the largest input/output count capped
at 256. Finally every group must agree, or the application is rejected with a
:class:`PlanningError` naming the join, the streams and their counts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from samza_dagster.application.specs import StreamTableJoinOperatorSpec
from samza_dagster.planner.analysis import JoinGroup
from samza_dagster.planner.errors import PlanningError


@dataclass(frozen=True)
class Assignment:
    """Why an intermediate stream got its count: from ``source`` through ``join``, or the
    default (``join`` None)."""

    partitions: int
    source: str | None
    join: str | None


def default_intermediate_partitions(configured: int | None, known_counts: Iterable[int], cap: int) -> int:
    if configured is not None:
        return configured
    return min(max(known_counts, default=1), cap)


def assign_intermediate_partitions(
    groups: list[JoinGroup],
    known: Mapping[str, int],
    intermediates: Iterable[str],
    default: int,
) -> dict[str, Assignment]:
    """Counts for every intermediate stream; raises PlanningError on a disagreeing group."""
    counts: dict[str, int] = dict(known)
    assigned: dict[str, Assignment] = {}
    groups_of: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        for sid in group.stream_ids:
            groups_of.setdefault(sid, []).append(index)

    queue: deque[int] = deque(i for i, g in enumerate(groups) if any(s in counts for s in g.stream_ids))
    queued = set(queue)
    while queue:
        index = queue.popleft()
        queued.discard(index)
        group = groups[index]
        defined = [sid for sid in group.stream_ids if sid in counts]
        _check_agreement(group, counts, assigned)
        value, source = counts[defined[0]], defined[0]
        for sid in group.stream_ids:
            if sid in counts:
                continue
            counts[sid] = value
            assigned[sid] = Assignment(value, source, group.join.op_id)
            for other in groups_of.get(sid, ()):
                if other != index and other not in queued:
                    queue.append(other)
                    queued.add(other)

    for sid in intermediates:
        if sid not in counts:
            counts[sid] = default
            assigned[sid] = Assignment(default, None, None)
    for group in groups:
        _check_agreement(group, counts, assigned)
    return assigned


def _check_agreement(group: JoinGroup, counts: Mapping[str, int], assigned: Mapping[str, Assignment]) -> None:
    defined = {sid: counts[sid] for sid in group.stream_ids if sid in counts}
    if len(set(defined.values())) <= 1:
        return
    join = group.join
    kind = "stream-table join" if isinstance(join, StreamTableJoinOperatorSpec) else "join"
    table = f" (table {group.table_id!r})" if group.table_id else ""
    parts = []
    for sid, count in defined.items():
        why = assigned.get(sid)
        if why is None:
            parts.append(f"{sid!r} has {count}")
        elif why.join is None:
            parts.append(f"intermediate {sid!r} has {count} (the default)")
        else:
            parts.append(f"intermediate {sid!r} has {count} (from {why.source!r} through join {why.join!r})")
    raise PlanningError(
        f"{kind} {join.op_id!r}{table} needs its streams to have the same partition count, but " + ", ".join(parts),
        streams=dict(defined),
        operator=join.op_id,
    )
