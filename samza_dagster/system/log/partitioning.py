"""Which partition an outgoing envelope goes to — shared by the log and in-memory systems.

The rule is the contract's: ``partition`` picks the partition outright; else ``partition_key``
(or, failing that, ``key``) is hashed with Kafka's default partitioner, so a keyed stream lands
in the same partition here as on Kafka; else the producer spreads messages round-robin.
"""

from __future__ import annotations

from samza_dagster.system.model import OutgoingMessageEnvelope
from samza_dagster.system.partitioner import key_to_bytes, partition_for_key


class RoundRobin:
    """The next partition for an unkeyed message, per stream (not shared across producers)."""

    __slots__ = ("_next",)

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def next(self, stream: str, partition_count: int) -> int:
        n = self._next.get(stream, 0)
        self._next[stream] = n + 1
        return n % partition_count


def choose_partition(
    envelope: OutgoingMessageEnvelope,
    partition_count: int,
    round_robin: RoundRobin,
) -> int:
    """The partition ``envelope`` is written to on a stream of ``partition_count`` partitions.

    Raises ValueError naming the stream when an explicit partition is out of range.
    """
    partition = envelope.partition
    if partition is not None:
        if type(partition) is not int or not 0 <= partition < partition_count:
            raise ValueError(
                f"stream {envelope.system_stream.stream!r} on system {envelope.system_stream.system!r} has "
                f"{partition_count} partitions; an envelope asked for partition {partition!r}"
            )
        return partition
    key = envelope.partition_key
    if key is None:
        key = envelope.key
    if key is None:
        return round_robin.next(envelope.system_stream.stream, partition_count)
    if type(key) is not bytes:
        key = key_to_bytes(key)
    return partition_for_key(key, partition_count)
