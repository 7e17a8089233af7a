"""ConfluentSystemProducer: the Kafka system's producer on librdkafka (``kafka.client=confluent``).

librdkafka batches in C (``linger.ms``); ``send`` only hands a message over. Partitioning: an
envelope's ``partition`` outright; else the murmur2 hash of a ``partition_key`` that differs
from the key (``system/partitioner.py``, Kafka's DefaultPartitioner); else librdkafka's own
``murmur2_random`` partitioner on the key — the same hash, computed in C — or a random partition
for a message without a key.

Delivery is confirmed by callbacks, served on every ``flush`` and every few hundred sends; the
first failure is kept, names topic and partition, and is sticky as in Samza's
KafkaSystemProducer: every later send and flush raises it, so a commit (which flushes first)
never checkpoints past a lost message. ``flush`` waits until librdkafka has nothing in flight.

Statistics. With ``systems.<s>.producer.statistics.interval.ms`` set, librdkafka's totals
(messages sent, produce requests) are kept and reported by :meth:`metrics_snapshot` (the
container's summary shows them under ``producer-<system>``): messages per produce request is
how well ``linger.ms`` / ``batch.num.messages`` batch.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.model import OutgoingMessageEnvelope
from samza_dagster.system.errors import PartitionError, StreamNotFoundError
from samza_dagster.system.kafka.confluent_config import ConfluentConfigs, config_error
from samza_dagster.system.kafka.common import not_bytes_error
from samza_dagster.system.kafka.errors import KafkaProducerError, unavailable
from samza_dagster.system.partitioner import key_to_bytes, partition_for_key

#: serve delivery callbacks every this many sends (poll(0) costs a call into librdkafka)
SERVE_EVERY = 512
UNASSIGNED = -1


class ConfluentSystemProducer:
    #: ``flush`` waits for every source's messages (the container flushes once per commit)
    flush_covers_all_sources = True

    def __init__(self, system_name: str, config: Config, clients: ConfluentConfigs) -> None:
        self.system_name = system_name
        self._clients = clients
        self._producer: Any = None
        self._partitions: dict[str, int] = {}
        self._error: KafkaProducerError | None = None
        self._lock = threading.Lock()
        self._unserved = 0
        delivery_ms = clients.producer.get("delivery.timeout.ms") or clients.producer.get("message.timeout.ms", 120_000)
        self._flush_timeout_s = int(delivery_ms) / 1000 + 5
        self._statistics: dict[str, int] = {}
        self._flushes = 0
        if int(clients.producer.get("statistics.interval.ms", 0) or 0) > 0:
            clients.producer["stats_cb"] = self._on_statistics

    def register(self, source: str) -> None:
        pass

    def start(self) -> None:
        """Create the client and ask for the cluster's metadata once: an unreachable broker
        fails here, within bootstrap.timeout.ms, naming its address."""
        # confluent-kafka loads only when a Kafka system uses it (kafka.client picks the client library)
        from confluent_kafka import KafkaException

        try:
            self._client().list_topics(timeout=self._clients.bootstrap_timeout_s)
        except KafkaException as exc:
            raise unavailable(self.system_name, self._clients.bootstrap_servers, exc, "producer start") from exc

    def _client(self) -> Any:
        if self._producer is None:
            with self._lock:
                if self._producer is None:
                    from confluent_kafka import KafkaException, Producer

                    try:
                        self._producer = Producer(self._clients.producer)
                    except KafkaException as exc:
                        raise config_error(exc, self._clients.producer_sources, "producer") or exc from None
        return self._producer

    # -- send ------------------------------------------------------------------------------
    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        if self._error is not None:
            raise self._error
        producer = self._producer or self._client()
        topic = envelope.system_stream.stream
        count = self._partitions.get(topic) or self._partition_count(topic)
        partition = envelope.partition
        if partition is None:
            hash_key = envelope.partition_key
            if hash_key is not None and hash_key is not envelope.key:
                partition = partition_for_key(hash_key if type(hash_key) is bytes else key_to_bytes(hash_key), count)
            else:
                partition = UNASSIGNED
        elif not 0 <= partition < count:
            raise PartitionError(f"Kafka system {self.system_name!r}: cannot send to topic {topic!r} partition "
                             f"{partition}: the topic has {count} partitions")
        key = envelope.key
        try:
            producer.produce(topic, envelope.message, key, partition=partition, on_delivery=self._on_delivery,
                             timestamp=envelope.event_time or 0)
        except BufferError:  # librdkafka's queue is full: let it deliver, then hand it over
            producer.poll(0.5)
            producer.produce(topic, envelope.message, key, partition=partition, on_delivery=self._on_delivery,
                             timestamp=envelope.event_time or 0)
        except TypeError as exc:
            raise not_bytes_error(self.system_name, topic, envelope, exc) from exc
        self._unserved += 1
        if self._unserved >= SERVE_EVERY:
            self._unserved = 0
            producer.poll(0)

    def _partition_count(self, topic: str) -> int:
        """Partition count of ``topic`` (one metadata request per topic; topics do not shrink).
        A topic that does not exist is a StreamNotFoundError here, at the first send."""
        from confluent_kafka import KafkaException

        try:
            metadata = self._producer.list_topics(topic, timeout=self._clients.bootstrap_timeout_s)
        except KafkaException as exc:
            raise unavailable(self.system_name, self._clients.bootstrap_servers, exc, f"metadata of {topic!r}") from exc
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            raise StreamNotFoundError(self.system_name, topic, str(found.error) if found is not None else "")
        self._partitions[topic] = len(found.partitions)
        return self._partitions[topic]

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and self._error is None:
            self._error = KafkaProducerError(
                f"Kafka system {self.system_name!r}: send to topic {message.topic()!r} partition "
                f"{message.partition()} failed: {error.str()}"
            )

    def _on_statistics(self, raw: str) -> None:
        """librdkafka's statistics callback (served inside poll/flush)."""
        stats = json.loads(raw)
        requests = sum(int(b.get("req", {}).get("Produce", 0)) for b in stats.get("brokers", {}).values())
        self._statistics = {"txmsgs": int(stats.get("txmsgs", 0)), "produce_requests": requests}

    def metrics_snapshot(self) -> dict[str, Any]:
        """Flushes so far, and librdkafka's totals when statistics are on."""
        snapshot: dict[str, Any] = {"flushes": self._flushes}
        if self._statistics:
            snapshot["librdkafka"] = dict(self._statistics)
        return snapshot

    # -- flush / stop ----------------------------------------------------------------------
    def flush(self, source: str) -> None:
        """Wait until librdkafka has delivered (or failed) every message sent so far; raise the
        first failure. One librdkafka producer serves every source, as in Samza."""
        self._flushes += 1
        if self._producer is not None:
            left = self._producer.flush(self._flush_timeout_s)
            if left:
                raise unavailable(self.system_name, self._clients.bootstrap_servers,
                                  TimeoutError(f"{left} messages unacknowledged"),
                                  f"flush after {self._flush_timeout_s:.0f} s")
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        if self._producer is None:
            return
        try:
            if self._error is None:
                self.flush("stop")
        finally:
            self._producer = None
