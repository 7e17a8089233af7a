"""LoggedStore: a raw store whose every put/delete is also sent to the store's changelog
partition. Sends are buffered by the producer and flushed at commit, before the checkpoint
that covers the writes (the container's commit order guarantees that)."""

from __future__ import annotations

from collections.abc import Iterator

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.protocols import SystemProducer


class LoggedStore:
    __slots__ = ("_store", "_producer", "_source", "_stream", "_partition", "writes")

    def __init__(self, store, producer: SystemProducer, source: str, changelog: SystemStream, partition: int) -> None:
        self._store = store
        self._producer = producer
        self._source = source
        self._stream = changelog
        self._partition = partition
        self.writes = 0

    @property
    def producer(self) -> SystemProducer:
        return self._producer

    def get(self, key: bytes) -> bytes | None:
        return self._store.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._store.put(key, value)
        self._producer.send(self._source, OutgoingMessageEnvelope(self._stream, value, key, None, self._partition))
        self.writes += 1

    def delete(self, key: bytes) -> None:
        self._store.delete(key)
        # a None message is the changelog's tombstone
        self._producer.send(self._source, OutgoingMessageEnvelope(self._stream, None, key, None, self._partition))
        self.writes += 1

    def range(self, from_key: bytes, to_key: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self._store.range(from_key, to_key)

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        return self._store.all()

    def flush(self) -> None:
        self._store.flush()

    def close(self) -> None:
        self._store.close()
