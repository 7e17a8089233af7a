"""Kafka's default partitioner (murmur2 of the key bytes), shared by every system so a
keyed stream lands in the same partition on the embedded log as on Kafka, and topics
written by Java clients co-partition with ours."""

from __future__ import annotations

from kafka.partitioner.default import murmur2


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    """The partition Kafka's DefaultPartitioner picks for a non-null key."""
    return (murmur2(key_bytes) & 0x7FFFFFFF) % num_partitions


def key_to_bytes(key: object) -> bytes:
    """Bytes to hash for a partition key that is not bytes yet (strings as UTF-8)."""
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key).encode("utf-8")
    return repr(key).encode("utf-8")
