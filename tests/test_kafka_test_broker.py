"""The tests' own Kafka broker keeps records whatever their timestamps.

Test data carries synthetic event times (1970, 2023), and Kafka's time retention deletes a
segment, the active one included, once its newest timestamp is older than ``retention.ms`` — at a
retention check every 5 minutes, so a check falling inside a test once removed its input
mid-test. ``support/kafka_broker.py`` turns broker-wide time retention off; a topic's own
``retention.ms`` still applies. Shown on a broker of the same settings whose retention check runs
every second: a topic with its own one-second retention is emptied (so the check ran), while a
topic with the broker's defaults keeps every 1970-stamped record.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from support.kafka_broker import start_cluster
from support.waiting import wait_until

#: 1970-01-01 00:16:40 UTC, as the startpoint and round-trip tests stamp their records
OLD_MS = 1_000_000
RECORDS = 13


@pytest.mark.kafka
@pytest.mark.timeout(180)
def test_records_with_old_timestamps_survive_the_brokers_retention_check():
    # Kafka's first retention check runs 30 s after start, then every check interval
    cluster = start_cluster(1, {"log.retention.check.interval.ms": "1000"})
    try:
        servers = cluster.bootstrap_servers
        _create_and_fill(servers)
        consumer = Consumer({"bootstrap.servers": servers, "group.id": "watermarks"})
        try:

            def watermarks(topic: str) -> tuple[int, int]:
                return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)

            # the topic's own retention removes its records: the retention check has run
            wait_until(lambda: watermarks("expiring") == (RECORDS, RECORDS), 120, "the retention check")
            assert watermarks("kept") == (0, RECORDS)
        finally:
            consumer.close()
    finally:
        cluster.stop()


def _create_and_fill(servers: str) -> None:
    """Both topics, each with ``RECORDS`` records stamped ``OLD_MS`` on; the clients are gone when
    this returns (a librdkafka client left alive past the broker's stop logs connection errors)."""
    admin = AdminClient({"bootstrap.servers": servers})
    topics = [NewTopic("kept", 1, 1), NewTopic("expiring", 1, 1, config={"retention.ms": "1000"})]
    for future in admin.create_topics(topics).values():
        future.result()
    producer = Producer({"bootstrap.servers": servers})
    for topic in ("kept", "expiring"):
        for i in range(RECORDS):
            producer.produce(topic, b"m%d" % i, partition=0, timestamp=OLD_MS + i)
    assert producer.flush(30) == 0
