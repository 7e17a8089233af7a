"""Which partition an outgoing message goes to, shared by every system.

Kafka's default partitioner (murmur2 of the key bytes) is used everywhere, so a keyed stream
lands in the same partition on the embedded log or in memory as on Kafka, and topics written
by Java clients co-partition with ours. ``choose_partition`` applies the whole rule (docs/reference.md, "Wire formats")
for the systems that pick partitions themselves (log and in-memory): ``partition`` picks the
partition outright; else ``partition_key`` (or, failing that, ``key``) is hashed; else the
producer spreads messages round-robin.
"""

from __future__ import annotations

from functools import lru_cache

from kafka.partitioner.default import murmur2

from samza_dagster.model import OutgoingMessageEnvelope
from samza_dagster.system.errors import PartitionError


@lru_cache(maxsize=65536)
def _positive_murmur2(key_bytes: bytes) -> int:
    # kafka-python's murmur2 is pure Python (the bulk of a keyed send's partitioning; cost in
    # docs/benchmarks.md); keys repeat in keyed streams (users, sessions), and a hit is one lookup.
    return murmur2(key_bytes) & 0x7FFFFFFF


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    """The partition Kafka's DefaultPartitioner picks for a non-null key."""
    return _positive_murmur2(key_bytes) % num_partitions


def key_to_bytes(key: object) -> bytes:
    """Bytes to hash for a partition key that is not bytes yet (strings as UTF-8)."""
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key).encode("utf-8")
    return repr(key).encode("utf-8")


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
            raise PartitionError(
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
