"""The Kafka broker of the tests (tansu, memory-only) for benchmarks, and loading data into it.

Topics are created with explicit configs: the broker returns no default topic configs and Quix
Streams needs ``retention.ms`` (the broker returns no default topic configs). Data is loaded with confluent-kafka (librdkafka,
installed with Quix Streams) because it loads 1M messages several times faster than
kafka-python; the loader is not what is measured.

The broker's high watermark is the base offset of a partition's last record batch + 1
(see the broker note in support/kafka_broker.py), and the engine's bounded Kafka streams stop at the high watermark captured at
start. So the loader ends every partition with a batch of exactly one record (flush, then one
record per partition, then flush): the watermark is then right.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

TOPIC_CONFIGS = {"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"}


def start_broker():
    from support.kafka_broker import start_broker as _start

    return _start()


def create_topics(bootstrap: str, topics: Iterable[str], partitions: int, compact: bool = False) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    configs = dict(TOPIC_CONFIGS, **({"cleanup.policy": "compact"} if compact else {}))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="samza-bench-admin")
    try:
        admin.create_topics([NewTopic(t, partitions, 1, topic_configs=configs) for t in topics])
    finally:
        admin.close()


def load(bootstrap: str, topic: str, messages: int, partitions: int, keys: int, value_size: int = 100) -> float:
    """Produce ``messages`` keyed records round-robin over ``partitions``; returns seconds."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": 500000,
            "compression.type": "none",
        }
    )
    value = b"v" * value_size
    key_bytes = [f"key-{k}".encode() for k in range(keys)]
    t0 = time.perf_counter()
    body = messages - partitions
    for i in range(body):
        while True:
            try:
                producer.produce(topic, value, key_bytes[i % keys], partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    producer.flush(60)
    for p in range(partitions):  # one single-record batch last in every partition (module doc)
        producer.produce(topic, value, key_bytes[(body + p) % keys], partition=p)
        producer.flush(60)
    return time.perf_counter() - t0


def end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="samza-bench-offsets")
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = consumer.end_offsets(tps)
        return [ends[tp] for tp in tps]
    finally:
        consumer.close()
