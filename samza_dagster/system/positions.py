"""Whether a consumer has read a partition up to an offset when no message holds the offsets
just before it.

A reader that reads a partition "to its head" usually stops at the envelope at the newest
offset. That offset need not hold a message: on Kafka, a transactional writer's commit and
abort markers take offsets that no consumer ever receives (the newest offset of a partition an
exactly-once job writes is always a marker), and compaction removes records. A consumer that
knows its fetch position — ``position(ssp)``, the next offset it would return, past such
offsets (both Kafka consumers) — has read everything before ``upcoming`` once that position
reaches it. Consumers without ``position`` (the embedded log's, whose newest offset always holds
a message) are never reported as done here: the envelope at the newest offset ends them.
"""

from __future__ import annotations

from samza_dagster.model import SystemStreamPartition
from samza_dagster.system.protocols import ReportsPosition


def position_reached(consumer: object, ssp: SystemStreamPartition, upcoming_offset: int) -> bool:
    """Whether ``consumer``'s fetch position in ``ssp`` is at or past ``upcoming_offset``
    (integer offsets: the systems whose consumers have a position)."""
    if not isinstance(consumer, ReportsPosition):
        return False
    at = consumer.position(ssp)
    return at is not None and int(at) >= upcoming_offset
