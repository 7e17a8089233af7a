"""KafkaSystemProducer: batched sends through kafka-python, Kafka's default partitioning.

Partition of an envelope: ``partition`` outright; else the murmur2 hash of ``partition_key``
(or ``key``) as Kafka's DefaultPartitioner computes it (``system/partitioner.py``), passed to
kafka-python explicitly so keyed streams co-partition with Java clients and with the log
system; else kafka-python spreads the message (sticky partitioning).

Failures are tracked cheaply: every send's future gets one cached errback object per
topic-partition (no allocation per message) that records the *first* error; ``flush`` waits
for all acknowledgements and raises it, naming topic and partition. The error is sticky, as in
Samza's KafkaSystemProducer: a producer that lost a message refuses further sends.
"""

from __future__ import annotations

import threading
from typing import Any

from kafka.errors import KafkaTimeoutError

from samza_dagster.config.config import Config
from samza_dagster.system.errors import PartitionError, StreamNotFoundError
from samza_dagster.system.kafka.config import KafkaClientConfigs
from samza_dagster.system.kafka.common import not_bytes_error
from samza_dagster.system.kafka.errors import KafkaProducerError, connect, unavailable
from samza_dagster.model import OutgoingMessageEnvelope
from samza_dagster.system.partitioner import key_to_bytes, partition_for_key


class _ErrorSink:
    """Errback of the sends to one topic-partition; records the producer's first failure."""

    __slots__ = ("producer", "topic", "partition")

    def __init__(self, producer: KafkaSystemProducer, topic: str, partition: int | None) -> None:
        self.producer = producer
        self.topic = topic
        self.partition = partition

    def __call__(self, exc: BaseException) -> None:
        producer = self.producer
        if producer._error is None:
            where = f"partition {self.partition}" if self.partition is not None else "a spread partition"
            error = KafkaProducerError(
                f"Kafka system {producer.system_name!r}: send to topic {self.topic!r} {where} failed: "
                f"{type(exc).__name__}: {exc}"
            )
            error.__cause__ = exc
            producer._error = error


class KafkaSystemProducer:
    #: ``flush`` waits for every source's messages (the container flushes once per commit)
    flush_covers_all_sources = True

    def __init__(self, system_name: str, config: Config, clients: KafkaClientConfigs) -> None:
        self.system_name = system_name
        self._clients = clients
        self._producer: Any = None
        self._sources: set[str] = set()
        self._partition_counts: dict[str, int] = {}
        self._sinks: dict[tuple[str, int | None], _ErrorSink] = {}
        self._tracked: set[str] = set()  # topics given to kafka-python's metadata (``_track``)
        self._error: KafkaProducerError | None = None
        self._lock = threading.Lock()  # guards client creation and the caches' misses only
        # kafka-python fails undeliverable batches after delivery_timeout_ms; flush waits that
        # long plus a margin before calling the rest unacknowledged.
        self._flush_timeout_s = clients.producer.get("delivery_timeout_ms", 120000) / 1000 + 5

    def register(self, source: str) -> None:
        self._sources.add(source)

    def start(self) -> None:
        self._client()

    def _client(self) -> Any:
        producer = self._producer
        if producer is None:
            with self._lock:
                if self._producer is None:
                    # kafka-python loads only when a Kafka system uses it (kafka.client picks the client library)
                    from kafka import KafkaProducer

                    self._producer = connect(
                        self.system_name,
                        self._clients.bootstrap_servers,
                        "producer",
                        lambda: KafkaProducer(**self._clients.producer),
                    )
                producer = self._producer
        return producer

    # -- send ------------------------------------------------------------------------------
    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        if self._error is not None:
            raise self._error
        producer = self._producer or self._client()
        topic = envelope.system_stream.stream
        partition = envelope.partition
        if partition is None:
            hash_key = envelope.partition_key
            if hash_key is None:
                hash_key = envelope.key
            if hash_key is not None:
                count = self._partition_counts.get(topic) or self._partition_count(topic)
                partition = partition_for_key(
                    hash_key if type(hash_key) is bytes else key_to_bytes(hash_key), count
                )
        sink = self._sinks.get((topic, partition)) or self._sink(topic, partition)
        try:
            future = producer.send(topic, envelope.message, envelope.key, None, partition, envelope.event_time)
        except TypeError as exc:
            raise not_bytes_error(self.system_name, topic, envelope, exc) from exc
        except KafkaTimeoutError as exc:  # no metadata for the topic within max.block.ms
            raise StreamNotFoundError(
                self.system_name, topic, f"no metadata within max.block.ms (missing topic or unreachable brokers): {exc}"
            ) from exc
        except (AssertionError, ValueError) as exc:  # e.g. an explicit partition that does not exist
            raise PartitionError(
                f"Kafka system {self.system_name!r}: cannot send to topic {topic!r} partition {partition}: {exc}"
            ) from exc
        future.add_errback(sink)

    def _sink(self, topic: str, partition: int | None) -> _ErrorSink:
        """The errback of a topic-partition, made on its first send — which is also when the
        topic is put on kafka-python's list of tracked topics (``_track``)."""
        if topic not in self._tracked:
            self._tracked.add(topic)
            self._track(topic)
        sink = _ErrorSink(self, topic, partition)
        self._sinks[(topic, partition)] = sink
        return sink

    def _track(self, topic: str) -> None:
        """Make kafka-python keep ``topic``'s metadata. kafka-python 3.0 refreshes metadata only
        for the topics it tracks, and it tracks a topic only when a send finds no metadata for
        it. A broker that answers the bootstrap's empty topic list with every topic (the tests'
        broker does; Kafka answers with none) hands over metadata for topics that are then not
        tracked, and the first refresh for a topic created later (a changelog, an intermediate
        stream) replaces it all: the untracked topics' leaders become unknown and their
        buffered batches expire after ``delivery_timeout_ms`` (seen: a two-stage job's output
        batches expiring while ``flush`` waited). Tracking every topic on its first send costs
        one set lookup per new topic-partition and holds whatever the broker answers."""
        sender = getattr(self._producer, "_sender", None)
        if sender is not None and hasattr(sender, "add_topic"):
            sender.add_topic(topic)

    def _partition_count(self, topic: str) -> int:
        """Partition count of ``topic`` from kafka-python's metadata (cached: topics do not shrink)."""
        from kafka.errors import KafkaError

        try:
            partitions = self._producer.partitions_for(topic)
        except KafkaTimeoutError as exc:
            raise StreamNotFoundError(
                self.system_name, topic, f"no metadata within max.block.ms (missing topic or unreachable brokers): {exc}"
            ) from exc
        except KafkaError as exc:
            raise StreamNotFoundError(self.system_name, topic, str(exc)) from exc
        if not partitions:
            raise StreamNotFoundError(self.system_name, topic)
        count = len(partitions)
        self._partition_counts[topic] = count
        return count

    # -- flush / stop ----------------------------------------------------------------------
    def flush(self, source: str) -> None:
        """Wait until every message sent so far is acknowledged; raise the first failure.

        kafka-python flushes the whole producer, not one source: the same as Samza's
        KafkaSystemProducer, whose sources share one Kafka producer.
        """
        if self._producer is None:
            if self._error is not None:
                raise self._error
            return
        try:
            self._producer.flush(timeout=self._flush_timeout_s)
        except KafkaTimeoutError as exc:
            raise unavailable(
                self.system_name,
                self._clients.bootstrap_servers,
                exc,
                f"flush: messages unacknowledged after {self._flush_timeout_s:.0f}s",
            ) from exc
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        producer = self._producer
        if producer is None:
            return
        try:
            if self._error is None:
                self.flush("stop")
        finally:
            self._producer = None
            producer.close(timeout=5)
