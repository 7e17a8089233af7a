"""A stored offset the partition no longer covers: Kafka's ``auto.offset.reset``, Samza's way.

A task resumes after its checkpoint, a side-input store after the offsets kept beside it. Either
may fall outside what the partition holds now:

* **before the oldest offset** — retention (or compaction, or Kafka's log cleaner) removed the
  messages up to past it;
* **past the upcoming offset** — the stream was deleted and created again (its offsets start
  over), or the file was restored from an older copy.

Kafka answers a fetch at either with OFFSET_OUT_OF_RANGE and the consumer resets by
``auto.offset.reset``; Samza's consumers reset by ``systems.<s>.samza.offset.default`` (per
stream ``samza.offset.default``). The container does the same for every system, before any
consumer starts: a resume offset out of ``[oldest, upcoming]`` becomes the oldest offset
(``oldest``) or the upcoming one (``upcoming``), with one WARNING per partition naming the
system, stream, partition, the stored offset and the range. Side-input stores always restart
from the oldest offset: the store is a view of the whole stream (docs/decisions.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import SystemStream, SystemStreamPartition
from samza_dagster.system.protocols import ReportsCleanupPolicy

log = logging.getLogger(__name__)

#: ``cleanup.policy`` of a stream (``"compact"``, ``"delete"``, ``"compact,delete"``), or None
#: when the system cannot say
PolicyLookup = Callable[[SystemStream], "str | None"]


def out_of_range_start(
    ssp: SystemStreamPartition,
    resume: str,
    partition_metadata: Any,
    compare: Callable[[str, str], int],
    reset_to: str,
    *,
    what: str,
    why: str,
    cleanup_policy: str | None = None,
) -> str | None:
    """Where to start instead of ``resume`` when it lies outside ``[oldest, upcoming]`` of the
    partition (``reset_to``: ``"oldest"`` or ``"upcoming"``), having logged why; None when
    ``resume`` is in range. ``what`` names whose offset it is and ``why`` what chose
    ``reset_to``, for the warning."""
    oldest, upcoming = partition_metadata.oldest_offset, partition_metadata.upcoming_offset
    before = compare(resume, oldest) < 0
    if not before and compare(resume, upcoming) <= 0:
        return None
    start = upcoming if reset_to == "upcoming" else oldest
    if before:
        cause = _removal_cause(cleanup_policy)
        skipped = f"skipping offsets [{resume}, {start})"
    else:
        cause = "the stream holds fewer messages than that: was it deleted and created again?"
        skipped = (
            "reading it again from the oldest offset" if start == oldest else f"skipping offsets [{oldest}, {start})"
        )
    log.warning(
        "system %s, stream %s, partition %d: %s resumes at offset %s, outside the partition's offsets [%s, %s] (%s); "
        "%s and starting at %s (%s)",
        ssp.system,
        ssp.stream,
        ssp.partition,
        what,
        resume,
        oldest,
        upcoming,
        cause,
        skipped,
        start,
        why,
    )
    return start


def admin_cleanup_policy(admin: Any, stream: str) -> str | None:
    """The stream's ``cleanup.policy`` where the system's admin can tell (the log's can), else None."""
    try:
        return admin.cleanup_policy(stream) if isinstance(admin, ReportsCleanupPolicy) else None
    except ValueError:  # a corrupt stored policy: the cleaner says so; here it only words a warning
        return None


def _removal_cause(cleanup_policy: str | None) -> str:
    policies = {p.strip() for p in (cleanup_policy or "").split(",") if p.strip()}
    if policies == {"compact"}:
        # compaction removes a record only when a newer one of its key (or an expired tombstone)
        # supersedes it, and those are still there to read
        return "compaction removed only superseded records and expired tombstones there; no live record is skipped"
    if policies == {"delete"}:
        return "retention removed it"
    return "retention or compaction removed it"


def reset_out_of_range(
    resume: dict[SystemStreamPartition, str],
    metadata: dict[SystemStream, Any],
    comparators: Callable[[str], Callable[[str, str], int]],
    streams: StreamConfig,
    cleanup_policy: PolicyLookup = lambda _ss: None,
) -> dict[SystemStreamPartition, str]:
    """``resume`` (the offsets after each checkpoint) with every offset out of its partition's
    range replaced as the module docstring says. ``comparators(system)`` gives the system
    admin's ``offset_comparator``."""
    result = dict(resume)
    for ssp, offset in resume.items():
        ss = SystemStream(ssp.system, ssp.stream)
        md = metadata.get(ss)
        pm = md.partitions.get(ssp.partition) if md is not None else None
        if pm is None:
            continue
        default = streams.offset_default(ss)
        start = out_of_range_start(
            ssp,
            offset,
            pm,
            comparators(ssp.system),
            default,
            what="the checkpoint",
            why=f"samza.offset.default={default}",
            cleanup_policy=cleanup_policy(ss),
        )
        if start is not None:
            result[ssp] = start
    return result
