"""The tests' own Kafka broker starts every time and keeps records whatever their timestamps.

* Test data carries synthetic event times (1970, 2023), and Kafka's time retention deletes a
  segment, the active one included, once its newest timestamp is older than ``retention.ms`` — at a
  retention check every 5 minutes, so a check falling inside a test once removed its input
  mid-test. ``support/kafka_broker.py`` turns broker-wide time retention off; a topic's own
  ``retention.ms`` still applies. Shown on a broker of the same settings whose retention check runs
  every second: a topic with its own one-second retention is emptied (so the check ran), while a
  topic with the broker's defaults keeps every 1970-stamped record.
* Two ways a start once failed, or could fail, by chance: a random cluster id starting with ``-``
  (one in 64; ``kafka-storage format`` read it as an option), and a port taken between choosing it
  and the node binding it.
"""

from __future__ import annotations

import base64
import socket
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from support.kafka_broker import _free_port, new_cluster_id, start_cluster
from support.waiting import wait_until

#: 1970-01-01 00:16:40 UTC, as the startpoint and round-trip tests stamp their records
OLD_MS = 1_000_000
RECORDS = 13


@pytest.mark.kafka
@pytest.mark.timeout(180)
def test_records_with_old_timestamps_survive_the_brokers_retention_check():
    # Kafka's first retention check runs log.initial.task.delay.ms (30 s) after start, then every
    # check interval: both short, so the check runs within seconds
    cluster = start_cluster(1, {"log.retention.check.interval.ms": "1000", "log.initial.task.delay.ms": "1000"})
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


def test_a_cluster_id_never_starts_with_a_dash():
    # 0xF8 puts 62 (``-`` in URL-safe base64) in the first six bits: one id in 64 does so, and
    # ``kafka-storage format -t -…`` then reads the id as an option and refuses to format
    dash_first = uuid.UUID(bytes=b"\xf8" + bytes(15))
    plain = uuid.UUID(bytes=b"\x10" + bytes(15))
    assert base64.urlsafe_b64encode(dash_first.bytes).startswith(b"-")
    draws: Iterator[uuid.UUID] = iter([dash_first, dash_first, plain])

    cluster_id = new_cluster_id(lambda: next(draws))

    assert cluster_id == base64.urlsafe_b64encode(plain.bytes).rstrip(b"=").decode()
    assert len(cluster_id) == 22
    assert next(draws, None) is None


@pytest.mark.kafka
@pytest.mark.timeout(180)
def test_a_cluster_whose_port_was_taken_while_it_started_starts_again_on_other_ports():
    # the first port handed out is taken (listening) before the node binds it, as any socket
    # opened in the second between choosing a port and the JVM binding it may take it
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = taken.getsockname()[1]
        handed_out = [taken_port]

        def free_port() -> int:
            port = taken_port if len(handed_out) == 1 else _free_port()
            handed_out.append(port)
            return port

        with pytest.warns(UserWarning, match="port was taken"):
            cluster = start_cluster(1, free_port=free_port)
        try:
            assert cluster.nodes[0].port != taken_port
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            assert set(admin.list_topics(timeout=10).brokers) == {1}
        finally:
            cluster.stop()
