"""A checkpointed offset the log no longer holds: Kafka's ``auto.offset.reset``, Samza's way.

Retention (or compaction, or Kafka's log cleaner) may remove a partition's messages up to past
the offset a task would resume from. Kafka answers a fetch there with OFFSET_OUT_OF_RANGE and
the consumer resets by ``auto.offset.reset``; Samza's consumers reset by
``systems.<s>.samza.offset.default`` (per stream ``samza.offset.default``). The container does
the same for every system, before any consumer starts: a resume offset below the partition's
oldest offset becomes the oldest offset (``oldest``) or the upcoming one (``upcoming``), with
one WARNING per partition naming the system, stream, partition and the offsets skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import SystemStream, SystemStreamPartition

log = logging.getLogger(__name__)


def reset_out_of_range(
    resume: dict[SystemStreamPartition, str],
    metadata: dict[SystemStream, Any],
    comparators: Callable[[str], Callable[[str, str], int]],
    streams: StreamConfig,
) -> dict[SystemStreamPartition, str]:
    """``resume`` (the offsets after each checkpoint) with every offset below its partition's
    oldest offset replaced as the module docstring says. ``comparators(system)`` gives the
    system admin's ``offset_comparator``."""
    result = dict(resume)
    for ssp, offset in resume.items():
        ss = SystemStream(ssp.system, ssp.stream)
        md = metadata.get(ss)
        pm = md.partitions.get(ssp.partition) if md is not None else None
        if pm is None or comparators(ssp.system)(offset, pm.oldest_offset) >= 0:
            continue
        default = streams.offset_default(ss)
        start = pm.upcoming_offset if default == "upcoming" else pm.oldest_offset
        log.warning(
            "system %s, stream %s, partition %d: the checkpoint resumes at offset %s, before the oldest offset %s "
            "(retention or compaction removed it); skipping offsets [%s, %s) and starting at %s "
            "(samza.offset.default=%s)",
            ssp.system, ssp.stream, ssp.partition, offset, pm.oldest_offset, offset, start, start, default,
        )
        result[ssp] = start
    return result
