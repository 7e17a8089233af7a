"""Stream helpers the demo and the example applications share (the tests use them too): create
streams, write generated records, read a whole stream back (to check a job's output against the
data it was given). They live with the applications, not in the engine, which never uses them.

They go through the system API (admin / producer / consumer) like any client would, so they
work on the embedded log and on Kafka alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from samza_dagster.config import Config
from samza_dagster.errors import ReadTimeoutError
from samza_dagster.system import (
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    system_factory,
)


@dataclass(frozen=True, slots=True)
class Record:
    """One message read back: where it was, its raw key/value and its log timestamp (ms)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None


def create_streams(config: Config, streams: dict[str, int], *, system: str = "log") -> None:
    """Create each stream (name → partition count) if missing."""
    admin = system_factory(config, system).get_admin(system, config)
    for name, partitions in streams.items():
        admin.create_stream(StreamSpec(name, name, system, partitions))
    _close(admin)


def produce(
    config: Config,
    stream: str,
    messages: Iterable[tuple[bytes | None, bytes, int | None]],
    *,
    system: str = "log",
    source: str = "demo-generator",
) -> int:
    """Write ``(key, value, event_time)`` triples (key-partitioned as Kafka does, or spread when
    the key is None); returns how many were written."""
    producer = system_factory(config, system).get_producer(system, config)
    producer.register(source)
    producer.start()
    target = SystemStream(system, stream)
    n = 0
    try:
        for key, value, event_time in messages:
            producer.send(source, OutgoingMessageEnvelope(target, value, key=key, event_time=event_time))
            n += 1
        producer.flush(source)
    finally:
        producer.stop()
    return n


def upcoming_offsets(config: Config, stream: str, *, system: str = "log") -> dict[int, int]:
    """partition → upcoming offset (the number of messages ever written, on the log)."""
    admin = system_factory(config, system).get_admin(system, config)
    try:
        md = admin.get_system_stream_metadata([stream])[stream]
    finally:
        _close(admin)
    return {p: int(m.upcoming_offset) for p, m in md.partitions.items()}


def message_count(config: Config, stream: str, *, system: str = "log") -> int:
    return sum(upcoming_offsets(config, stream, system=system).values())


def read_stream(config: Config, stream: str, *, system: str = "log", timeout_s: float = 60.0) -> list[Record]:
    """Every message of ``stream`` from its oldest offset to the head seen now, partition by
    partition in offset order."""
    factory = system_factory(config, system)
    admin = factory.get_admin(system, config)
    try:
        md = admin.get_system_stream_metadata([stream])[stream]
    finally:
        _close(admin)
    wanted: dict[SystemStreamPartition, int] = {}
    consumer = factory.get_consumer(system, config)
    for p, m in md.partitions.items():
        if m.newest_offset is None:
            continue
        ssp = SystemStreamPartition(system, stream, p)
        consumer.register(ssp, m.oldest_offset)
        wanted[ssp] = int(m.newest_offset)
    out: list[Record] = []
    if not wanted:
        return out
    consumer.start()
    deadline = time.monotonic() + timeout_s
    try:
        while wanted:
            if time.monotonic() > deadline:
                raise ReadTimeoutError(
                    f"reading {system}.{stream}: partitions {sorted(s.partition for s in wanted)} not read to head"
                )
            for ssp, envelopes in consumer.poll(set(wanted), 0.2).items():
                for env in envelopes:
                    if env.is_end_of_stream:
                        continue
                    offset = int(env.offset)
                    if offset > wanted.get(ssp, -1):
                        continue
                    out.append(Record(ssp.partition, offset, env.key, env.message, env.event_time))
                    if offset >= wanted[ssp]:
                        wanted.pop(ssp)
    finally:
        consumer.stop()
    return out


def _close(admin: Any) -> None:
    close = getattr(admin, "close", None) or getattr(admin, "stop", None)
    if callable(close):
        close()
