"""Apache Kafka for the benchmarks (support/kafka_broker.py's node), and loading data into it.

Topics are created with the broker's defaults (Kafka's: ``cleanup.policy=delete``, seven days'
retention), as a user's topics are. Data is loaded with confluent-kafka (librdkafka, installed
with Quix Streams) because it loads 1M messages several times faster than kafka-python; the
loader is not what is measured.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from support.kafka_broker import KafkaCluster


def start_broker() -> KafkaCluster:
    """One Apache Kafka node (KRaft, broker and controller) on this machine."""
    from support.kafka_broker import start_broker as _start

    return _start()


def broker_line(broker: KafkaCluster) -> str:
    """How the reports name the broker."""
    return f"Apache Kafka {broker.version} (one KRaft node, broker and controller, on the same machine)"


def create_topics(bootstrap: str, topics: Iterable[str], partitions: int) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="samza-bench-admin")
    try:
        admin.create_topics([NewTopic(t, partitions, 1) for t in topics])
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
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, value, key_bytes[i % keys], partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    remaining = producer.flush(60)
    if remaining:
        raise RuntimeError(f"{remaining} of {messages} messages to {topic} were not delivered within 60 s")
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
