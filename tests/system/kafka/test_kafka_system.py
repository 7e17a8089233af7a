"""The Kafka system against Apache Kafka (a broker started by support/kafka_broker.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections import defaultdict

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.partitioner import DefaultPartitioner

from samza_dagster.config import Config, ConfigError
from samza_dagster.system import (
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamExistsError,
    StreamNotFoundError,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    SystemUnavailableError,
    system_factory,
)
from samza_dagster.system.kafka import KafkaProducerError, KafkaSystemFactory, kafka_client_configs
from support.waiting import wait_until

pytestmark = pytest.mark.kafka

SYSTEM = "kafka"


def create(config: Config, topic: str, partitions: int, **props: str) -> None:
    admin = system_factory(config, SYSTEM).get_admin(SYSTEM, config)
    try:
        assert admin.create_stream(StreamSpec(topic, topic, SYSTEM, partitions, props or None)) is True
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    """``count`` records into each partition with the client's default batching (several records
    per batch), flushed before it returns."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    try:
        for partition, count in per_partition.items():
            for i in range(count):
                producer.send(topic, b"m%d" % i, key=b"k%d" % i, partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close()


def read(consumer, ssps, until, timeout_s: float = 30.0) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
    """Poll ``ssps`` until ``until(got)`` holds (or fail after ``timeout_s``)."""
    got: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = defaultdict(list)
    deadline = time.monotonic() + timeout_s
    while not until(got):
        assert time.monotonic() < deadline, f"timed out; got { {str(k): len(v) for k, v in got.items()} }"
        for ssp, envelopes in consumer.poll(ssps, 0.5).items():
            got[ssp].extend(envelopes)
    return got


# -- admin -------------------------------------------------------------------------------------


def test_create_stream_creates_once_and_rejects_a_different_partition_count(kafka_config, kafka_topic_prefix):
    topic = f"{kafka_topic_prefix}-coord"
    admin = KafkaSystemFactory().get_admin(SYSTEM, kafka_config)
    spec = StreamSpec("coord", topic, SYSTEM, 3, {"cleanup.policy": "compact"})
    assert admin.create_stream(spec) is True
    assert admin.create_stream(spec) is False  # same partition count: nothing to do
    with pytest.raises(StreamExistsError, match=rf"{topic}.*3 partitions.*5"):
        admin.create_stream(StreamSpec("coord", topic, SYSTEM, 5))
    metadata = admin.get_system_stream_metadata([topic])[topic]
    assert metadata.partition_count == 3
    assert all(
        p.newest_offset is None and p.oldest_offset == "0" == p.upcoming_offset for p in metadata.partitions.values()
    )
    admin.close()


def test_metadata_covers_every_partition_of_every_stream_in_one_round_of_requests(
    kafka_broker, kafka_config, kafka_topic_prefix
):
    a, b = f"{kafka_topic_prefix}-a", f"{kafka_topic_prefix}-b"
    create(kafka_config, a, 3)
    create(kafka_config, b, 2)
    produce(kafka_broker.bootstrap_servers, a, {0: 4, 2: 1})  # partition 1 stays empty
    produce(kafka_broker.bootstrap_servers, b, {0: 2, 1: 3})

    admin = KafkaSystemFactory().get_admin(SYSTEM, kafka_config)
    client = admin._client()
    calls: dict[str, int] = defaultdict(int)
    for name in ("describe_topics", "list_partition_offsets"):
        real = getattr(client, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        setattr(client, name, counted)

    metadata = admin.get_system_stream_metadata([a, b])
    # One metadata request for both topics; one ListOffsets per bound for all 5 partitions.
    assert dict(calls) == {"describe_topics": 1, "list_partition_offsets": 2}
    offsets = {
        (topic, p): (m.oldest_offset, m.newest_offset, m.upcoming_offset)
        for topic in (a, b)
        for p, m in metadata[topic].partitions.items()
    }
    assert offsets == {
        (a, 0): ("0", "3", "4"),
        (a, 1): ("0", None, "0"),  # empty partition: no newest offset
        (a, 2): ("0", "0", "1"),
        (b, 0): ("0", "1", "2"),
        (b, 1): ("0", "2", "3"),
    }
    assert admin.offset_comparator("9", "10") < 0 < admin.offset_comparator("10", "9")
    ssp = SystemStreamPartition(SYSTEM, a, 0)
    assert admin.get_offsets_after({ssp: "3"}) == {ssp: "4"}
    admin.close()


def test_metadata_of_a_missing_stream_names_it(kafka_config, kafka_topic_prefix):
    existing, missing = f"{kafka_topic_prefix}-here", f"{kafka_topic_prefix}-nowhere"
    create(kafka_config, existing, 1)
    admin = KafkaSystemFactory().get_admin(SYSTEM, kafka_config)
    with pytest.raises(StreamNotFoundError, match=missing):
        admin.get_system_stream_metadata([existing, missing])
    admin.close()


# -- round trip --------------------------------------------------------------------------------


@pytest.mark.timeout(600)
def test_100k_keyed_messages_are_read_back_exactly_once_in_partition_order(kafka_config, kafka_topic_prefix):
    topic, partitions, total = f"{kafka_topic_prefix}-bulk", 4, 100_000
    create(kafka_config, topic, partitions)
    stream = SystemStream(SYSTEM, topic)
    producer = KafkaSystemFactory().get_producer(SYSTEM, kafka_config)
    producer.register("task")
    producer.start()
    for i in range(total):
        producer.send("task", OutgoingMessageEnvelope(stream, b"%d" % i, key=b"k%d" % (i % 997), event_time=1_000 + i))
    producer.flush("task")
    producer.stop()

    consumer = KafkaSystemFactory().get_consumer(SYSTEM, kafka_config)
    ssps = frozenset(SystemStreamPartition(SYSTEM, topic, p) for p in range(partitions))
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    # a hang guard, not a speed bound: kafka-python takes minutes for 100k records on a loaded machine
    got = read(consumer, ssps, lambda got: sum(map(len, got.values())) >= total, timeout_s=240)
    consumer.stop()

    seen = bytearray(total)
    for _ssp, envelopes in got.items():
        assert [int(e.offset) for e in envelopes] == list(range(len(envelopes)))  # dense, in order
        values = [int(e.message) for e in envelopes]
        assert values == sorted(values)  # per-partition order is send order
        for e, value in zip(envelopes, values, strict=True):
            assert e.key == b"k%d" % (value % 997)
            assert e.event_time == 1_000 + value
            assert e.size == len(e.key) + len(e.message)
            seen[value] += 1
    assert seen == bytearray([1]) * total  # every message exactly once
    # keyed: one key never spans two partitions
    partition_of_key: dict[bytes, int] = {}
    for ssp, envelopes in got.items():
        for e in envelopes:
            assert partition_of_key.setdefault(e.key, ssp.partition) == ssp.partition


def test_keyed_messages_land_where_kafka_pythons_default_partitioner_puts_them(
    kafka_broker, kafka_config, kafka_topic_prefix
):
    ours, theirs, partitions = f"{kafka_topic_prefix}-ours", f"{kafka_topic_prefix}-theirs", 5
    create(kafka_config, ours, partitions)
    create(kafka_config, theirs, partitions)
    keys = [b"user-%d" % i for i in range(200)] + ["caf\u00e9".encode(), b""]

    producer = KafkaSystemFactory().get_producer(SYSTEM, kafka_config)
    producer.start()
    for key in keys:
        producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, ours), b"v", key=key))
    # partition_key wins over key; a str partition_key hashes as its UTF-8 bytes
    producer.send(
        "t", OutgoingMessageEnvelope(SystemStream(SYSTEM, ours), b"pk", key=b"ignored", partition_key="user-7")
    )
    producer.flush("t")
    producer.stop()

    plain = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)  # kafka-python's own partitioner
    for key in keys:
        plain.send(theirs, b"v", key=key)
    plain.flush()
    plain.close()

    def partitions_by_key(topic: str) -> dict[tuple[bytes, bytes], int]:
        consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, enable_auto_commit=False)
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        found: dict[tuple[bytes, bytes], int] = {}
        deadline = time.monotonic() + 15
        while len(found) < len(keys) + (topic == ours) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                found.update({(r.key, r.value): r.partition for r in records})
        consumer.close()
        return found

    ours_found, theirs_found = partitions_by_key(ours), partitions_by_key(theirs)
    assert len(theirs_found) == len(keys)
    for key in keys:
        assert ours_found[(key, b"v")] == theirs_found[(key, b"v")], key
    assert ours_found[(b"ignored", b"pk")] == theirs_found[(b"user-7", b"v")]
    # and the partitioner class itself agrees (its murmur2 is Java's)
    expected = {theirs_found[(k, b"v")] for k in keys}
    assert len(expected) == partitions  # the keys do spread over every partition
    partitioner = DefaultPartitioner()

    class Cluster:
        def topics(self):
            return {ours}

        def partitions_for_topic(self, topic):
            return set(range(partitions))

        def available_partitions_for_topic(self, topic):
            return set(range(partitions))

    for key in keys:
        assert partitioner.partition(ours, key, key, b"v", b"v", Cluster()) == ours_found[(key, b"v")]


def test_poll_returns_only_the_requested_partitions_and_may_run_on_another_thread(
    kafka_broker, kafka_config, kafka_topic_prefix
):
    topic = f"{kafka_topic_prefix}-sel"
    create(kafka_config, topic, 2)
    produce(kafka_broker.bootstrap_servers, topic, {0: 3, 1: 3})
    p0, p1 = (SystemStreamPartition(SYSTEM, topic, p) for p in range(2))
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, kafka_config)
    consumer.register(p0, "1")
    consumer.register(p1, "0")
    consumer.start()

    results: dict[str, object] = {}

    def poller() -> None:
        try:
            results["p0"] = read(consumer, [p0], lambda got: len(got[p0]) >= 2, timeout_s=10)
            # p1 was not asked for: nothing of it was returned or skipped
            assert p1 not in results["p0"]
            results["p1"] = read(consumer, [p1], lambda got: len(got[p1]) >= 3, timeout_s=10)
        except BaseException as exc:  # noqa: BLE001 - surfaced in the main thread below
            results["error"] = exc

    thread = threading.Thread(target=poller)
    thread.start()
    thread.join(30)
    consumer.stop()
    assert "error" not in results, results.get("error")
    assert [e.offset for e in results["p0"][p0]] == ["1", "2"]  # from the registered offset
    assert [e.message for e in results["p1"][p1]] == [b"m0", b"m1", b"m2"]


# -- bounded streams ---------------------------------------------------------------------------


def test_bounded_stream_ends_after_the_messages_present_at_start(kafka_broker, kafka_config, kafka_topic_prefix):
    topic = f"{kafka_topic_prefix}-bounded"
    create(kafka_config, topic, 3)
    # End offsets are captured at start(): batches of several records end where their last record does.
    produce(kafka_broker.bootstrap_servers, topic, {0: 4, 2: 2})
    config = kafka_config.with_overrides({f"systems.{SYSTEM}.streams.{topic}.samza.bounded": "true"})
    ssps = [SystemStreamPartition(SYSTEM, topic, p) for p in range(3)]
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, config)
    consumer.register(ssps[0], "1")
    consumer.register(ssps[1], "0")  # empty: ends at once
    consumer.register(ssps[2], "2")  # already at its end
    consumer.start()
    produce(kafka_broker.bootstrap_servers, topic, {0: 2, 1: 1})  # after start: not read

    got = read(consumer, ssps, lambda got: all(got[s] and got[s][-1].is_end_of_stream for s in ssps))
    assert [e.offset for e in got[ssps[0]]] == ["1", "2", "3", "END_OF_STREAM"]
    assert [e.is_end_of_stream for e in got[ssps[1]]] == [True]
    assert [e.is_end_of_stream for e in got[ssps[2]]] == [True]
    # end-of-stream comes once; nothing follows it
    started = time.monotonic()
    assert consumer.poll(ssps, 0.3) == {}
    assert time.monotonic() - started >= 0.25  # blocked instead of spinning
    consumer.stop()


def test_bounded_transactional_topic_ends_although_its_last_offset_is_a_commit_marker(
    kafka_broker, kafka_config, kafka_topic_prefix
):
    """A transactional producer leaves a commit marker at the partition's last offset: the end
    offset captured at start counts it, no consumer receives it, so end-of-stream must come from
    the fetch position passing the end, not from a message at ``end - 1``."""
    topic = f"{kafka_topic_prefix}-tx"
    create(kafka_config, topic, 1)
    producer = KafkaProducer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        transactional_id=f"{topic}-tx",
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, b"v%d" % i, key=b"k%d" % i, partition=0)
        producer.commit_transaction()
    finally:
        producer.close()
    # the coordinator writes the marker after EndTxn returns; until it lands the transaction is
    # still open at the partition, and a read_committed bounded stream rightly ends before it
    admin = KafkaSystemFactory().get_admin(SYSTEM, kafka_config)
    wait_until(
        lambda: admin.get_system_stream_metadata([topic])[topic].partitions[0].upcoming_offset == "4", 30, "the marker"
    )
    admin.close()
    config = kafka_config.with_overrides({f"systems.{SYSTEM}.streams.{topic}.samza.bounded": "true"})
    ssp = SystemStreamPartition(SYSTEM, topic, 0)
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, config)
    consumer.register(ssp, "0")
    consumer.start()
    got = read(consumer, [ssp], lambda got: bool(got[ssp]) and got[ssp][-1].is_end_of_stream, timeout_s=15)
    assert [e.offset for e in got[ssp]] == ["0", "1", "2", "END_OF_STREAM"]
    consumer.stop()


# -- errors ------------------------------------------------------------------------------------


def test_reading_a_missing_topic_fails_naming_it(kafka_config, kafka_topic_prefix):
    topic = f"{kafka_topic_prefix}-absent"
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, kafka_config)
    consumer.register(SystemStreamPartition(SYSTEM, topic, 0), "0")
    with pytest.raises(StreamNotFoundError, match=topic):
        consumer.start()


def test_reading_a_partition_beyond_the_topic_fails_naming_it(kafka_config, kafka_topic_prefix):
    topic = f"{kafka_topic_prefix}-small"
    create(kafka_config, topic, 2)
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, kafka_config)
    consumer.register(SystemStreamPartition(SYSTEM, topic, 2), "0")
    with pytest.raises(StreamNotFoundError, match=rf"{topic}, 2\].*2 partitions"):
        consumer.start()


def test_unreachable_brokers_fail_fast_naming_the_address():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    config = Config(
        {
            f"systems.{SYSTEM}.samza.factory": "kafka",
            f"systems.{SYSTEM}.consumer.bootstrap.servers": address,
            f"systems.{SYSTEM}.consumer.bootstrap.timeout.ms": "1500",
        }
    )
    factory = KafkaSystemFactory()
    consumer = factory.get_consumer(SYSTEM, config)
    consumer.register(SystemStreamPartition(SYSTEM, "t", 0), "0")
    # each gives up after its bootstrap timeout (the test's own timeout guards against a hang)
    for call in (
        lambda: factory.get_admin(SYSTEM, config).get_system_stream_metadata(["t"]),
        consumer.start,
        factory.get_producer(SYSTEM, config).start,
    ):
        with pytest.raises(SystemUnavailableError, match=address):
            call()


def test_flush_raises_naming_topic_and_partition_when_sends_fail(kafka_broker, kafka_config, kafka_topic_prefix):
    topic = f"{kafka_topic_prefix}-lost"
    create(kafka_config, topic, 2)
    config = kafka_config.with_overrides(
        {
            f"systems.{SYSTEM}.producer.delivery.timeout.ms": "1500",
            f"systems.{SYSTEM}.producer.request.timeout.ms": "1000",
            f"systems.{SYSTEM}.producer.linger.ms": "0",
        }
    )
    producer = KafkaSystemFactory().get_producer(SYSTEM, config)
    producer.start()
    stream = SystemStream(SYSTEM, topic)
    producer.send("t", OutgoingMessageEnvelope(stream, b"ok", partition=1))
    producer.flush("t")
    kafka_broker.pause()  # the broker stops answering: the next batch times out
    try:
        producer.send("t", OutgoingMessageEnvelope(stream, b"lost", partition=1))
        with pytest.raises(KafkaProducerError, match=rf"{topic}.*partition 1"):
            producer.flush("t")
    finally:
        kafka_broker.resume()
    with pytest.raises(KafkaProducerError):  # sticky: nothing more is accepted
        producer.send("t", OutgoingMessageEnvelope(stream, b"after"))
    producer.stop()  # closes without flushing again: the failure was already raised


def test_a_topic_created_after_the_producer_started_does_not_cost_the_others_their_metadata(
    kafka_config, kafka_topic_prefix
):
    """A job's producer starts knowing its output topic, then sends to a topic created later (a
    changelog, an intermediate stream); sends to the first topic must still be delivered. (With
    kafka-python 3.0 and a broker that answers an empty metadata request with every topic, the
    refresh for the new topic dropped the first one's metadata and its buffered batches expired;
    the producer now has the client track every topic it sends to.)"""
    first, later = f"{kafka_topic_prefix}-first", f"{kafka_topic_prefix}-later"
    create(kafka_config, first, 2)
    config = kafka_config.with_overrides(
        {
            f"systems.{SYSTEM}.producer.delivery.timeout.ms": "3000",
            f"systems.{SYSTEM}.producer.request.timeout.ms": "2000",
            f"systems.{SYSTEM}.producer.linger.ms": "500",
        }
    )
    producer = KafkaSystemFactory().get_producer(SYSTEM, config)
    producer.start()
    try:
        create(kafka_config, later, 1)
        # "a" and "c" wait out linger.ms in the client's buffer while the send to the new topic
        # refreshes the metadata, and nothing is sent to the first topic after it
        producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, first), b"a", partition=0))
        producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, first), b"c", partition=1))
        producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, later), b"b", partition=0))
        producer.flush("t")  # raised KafkaProducerError (batches expired) before
    finally:
        producer.stop()
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, kafka_config)
    ssps = [SystemStreamPartition(SYSTEM, first, 0), SystemStreamPartition(SYSTEM, first, 1)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    try:
        got = read(consumer, ssps, until=lambda r: sum(len(v) for v in r.values()) >= 2)
    finally:
        consumer.stop()
    assert sorted(e.message for v in got.values() for e in v) == [b"a", b"c"]


def test_bad_input_is_named(kafka_config, kafka_topic_prefix):
    topic = f"{kafka_topic_prefix}-bad"
    create(kafka_config, topic, 2)
    producer = KafkaSystemFactory().get_producer(SYSTEM, kafka_config)
    producer.start()
    with pytest.raises(TypeError, match=rf"{topic}.*bytes"):
        producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, topic), {"not": "bytes"}, partition=0))
    with pytest.raises(ValueError, match=rf"{topic}.*partition 7"):
        producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, topic), b"x", partition=7))
    producer.stop()
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, kafka_config)
    with pytest.raises(ValueError, match="oldest"):
        consumer.register(SystemStreamPartition(SYSTEM, topic, 0), "oldest")


def test_client_config_passes_through_with_kafka_python_names_and_types():
    configs = kafka_client_configs(
        SYSTEM,
        Config(
            {
                "systems.kafka.kafka.client": "kafka-python",
                "systems.kafka.producer.bootstrap.servers": "h1:9092,h2:9092",
                "systems.kafka.producer.linger.ms": "20",
                "systems.kafka.producer.acks": "all",
                "systems.kafka.producer.enable.idempotence": "false",
                "systems.kafka.consumer.security.protocol": "SASL_SSL",
                "systems.kafka.consumer.sasl.mechanism": "PLAIN",
                "systems.kafka.consumer.auto.offset.reset": "smallest",
                "systems.kafka.consumer.group.id": "ignored",
            }
        ),
    )
    assert configs.producer["linger_ms"] == 20 and configs.producer["acks"] == -1
    assert configs.producer["enable_idempotence"] is False
    assert configs.consumer["bootstrap_servers"] == "h1:9092,h2:9092"  # falls back to the producer's
    assert configs.consumer["auto_offset_reset"] == "earliest"
    assert configs.consumer["enable_auto_commit"] is False and "group_id" not in configs.consumer
    assert configs.admin["security_protocol"] == "SASL_SSL" and configs.admin["sasl_mechanism"] == "PLAIN"
    python = {"systems.kafka.kafka.client": "kafka-python"}
    with pytest.raises(ConfigError, match="systems.kafka.producer.linger.ms"):
        kafka_client_configs(
            SYSTEM,
            Config(
                {**python, "systems.kafka.producer.bootstrap.servers": "h", "systems.kafka.producer.linger.ms": "soon"}
            ),
        )
    with pytest.raises(ConfigError, match="systems.kafka.consumer.no.such.thing"):
        kafka_client_configs(
            SYSTEM,
            Config(
                {**python, "systems.kafka.consumer.bootstrap.servers": "h", "systems.kafka.consumer.no.such.thing": "1"}
            ),
        )
    with pytest.raises(ConfigError, match="systems.kafka.consumer.bootstrap.servers"):
        kafka_client_configs(SYSTEM, Config({}))


def test_confluent_client_config_translates_names_and_refuses_unknown_keys_by_name():
    from samza_dagster.system.kafka.confluent_config import confluent_configs

    configs = confluent_configs(
        SYSTEM,
        Config(
            {
                "systems.kafka.consumer.bootstrap.servers": "h1:9092",
                "systems.kafka.consumer.security.protocol": "SASL_SSL",
                "systems.kafka.consumer.sasl.plain.username": "job",  # kafka-python's spelling
                "systems.kafka.consumer.sasl.password": "secret",  # librdkafka's
                "systems.kafka.consumer.ssl.cafile": "/ca.pem",
                "systems.kafka.producer.linger.ms": "20",
                "systems.kafka.consumer.bootstrap.timeout.ms": "1500",
            }
        ),
    )
    assert configs.consumer["sasl.username"] == "job" and configs.consumer["sasl.password"] == "secret"
    assert configs.consumer["ssl.ca.location"] == "/ca.pem"
    assert configs.consumer["enable.auto.commit"] is False and configs.consumer["auto.offset.reset"] == "earliest"
    assert configs.producer["bootstrap.servers"] == "h1:9092" and configs.producer["linger.ms"] == "20"
    assert configs.producer["partitioner"] == "murmur2_random"  # Kafka's Java default partitioner
    assert configs.bootstrap_timeout_s == 1.5 and "bootstrap.timeout.ms" not in configs.consumer
    # the admin (kafka-python) connects like the consumer, in its own spelling
    admin = kafka_client_configs(
        SYSTEM, Config({"systems.kafka.consumer.bootstrap.servers": "h", "systems.kafka.consumer.sasl.username": "job"})
    ).admin
    assert admin["sasl_plain_username"] == "job"

    bad = Config(
        {
            "systems.kafka.consumer.bootstrap.servers": "h",
            "systems.kafka.consumer.no.such.thing": "1",
            "systems.kafka.producer.no.such.thing": "1",
        }
    )
    consumer = KafkaSystemFactory().get_consumer(SYSTEM, bad)
    with pytest.raises(ConfigError, match="systems.kafka.consumer.no.such.thing"):
        consumer.start()
    with pytest.raises(ConfigError, match="systems.kafka.producer.no.such.thing"):
        KafkaSystemFactory().get_producer(SYSTEM, bad).start()
    with pytest.raises(ConfigError, match="systems.kafka.kafka.client"):
        KafkaSystemFactory().get_consumer(SYSTEM, Config({"systems.kafka.kafka.client": "java"}))


# -- the confluent consumer: librdkafka's queue kept fed, back-pressure that keeps what it fetched ----


def test_confluent_consumer_defaults_keep_librdkafkas_queue_fed_and_yield_to_the_users_keys():
    from samza_dagster.system.kafka.confluent_config import confluent_configs

    base = {"systems.kafka.consumer.bootstrap.servers": "h:9092"}
    defaults = confluent_configs(SYSTEM, Config(base)).consumer
    # librdkafka's own (1,000 ms, 100,000 messages, 64 MiB) idle a fast consumer each second
    assert defaults["fetch.queue.backoff.ms"] == 10
    assert defaults["queued.min.messages"] == 20_000
    assert defaults["queued.max.messages.kbytes"] == 32_768
    mine = confluent_configs(
        SYSTEM,
        Config(
            dict(
                base,
                **{
                    "systems.kafka.consumer.fetch.queue.backoff.ms": "250",
                    "systems.kafka.consumer.queued.min.messages": "5000",
                    "systems.kafka.consumer.queued.max.messages.kbytes": "4096",
                },
            )
        ),
    ).consumer
    assert (mine["fetch.queue.backoff.ms"], mine["queued.min.messages"], mine["queued.max.messages.kbytes"]) == (
        "250",
        "5000",
        "4096",
    )
    # the producer's delivery callback runs for failures only, unless the user wants every report
    # (a setting confluent-kafka reads itself, as a bool)
    assert confluent_configs(SYSTEM, Config(base)).producer["delivery.report.only.error"] is True
    everything = confluent_configs(
        SYSTEM, Config(dict(base, **{"systems.kafka.producer.delivery.report.only.error": "False"}))
    ).producer
    assert everything["delivery.report.only.error"] is False
    with pytest.raises(ConfigError, match=r"systems\.kafka\.producer\.delivery\.report\.only\.error"):
        confluent_configs(SYSTEM, Config(dict(base, **{"systems.kafka.producer.delivery.report.only.error": "1"})))


@pytest.mark.parametrize("value", ["0", "lots"])
def test_park_max_bytes_is_validated_naming_the_key(value):
    config = Config(
        {"systems.kafka.consumer.bootstrap.servers": "h:9092", "systems.kafka.consumer.park.max.bytes": value}
    )
    with pytest.raises(ConfigError, match=r"systems\.kafka\.consumer\.park\.max\.bytes"):
        KafkaSystemFactory().get_consumer(SYSTEM, config)


def _confluent(kafka_broker, **consumer_keys: str):
    return KafkaSystemFactory().get_consumer(
        SYSTEM,
        Config(
            {
                "systems.kafka.samza.factory": "kafka",
                "systems.kafka.consumer.bootstrap.servers": kafka_broker.bootstrap_servers,
                "systems.kafka.consumer.statistics.interval.ms": "50",
                **{f"systems.kafka.consumer.{k}": v for k, v in consumer_keys.items()},
            }
        ),
    )


def _fetched_total(consumer, ssps, at_least: int) -> int:
    """librdkafka's count of messages received from the broker, once a statistics report
    covers ``at_least`` of them and one more report followed."""
    deadline = time.monotonic() + 30
    while consumer.metrics_snapshot().get("librdkafka", {}).get("rxmsgs", 0) < at_least:
        assert time.monotonic() < deadline, f"librdkafka reported {consumer.metrics_snapshot()}"
        assert not consumer.poll(ssps, 0.05)
    time.sleep(0.2)
    assert not consumer.poll(ssps, 0.05)  # statistics are served inside consume()
    return consumer.metrics_snapshot()["librdkafka"]["rxmsgs"]


def test_confluent_consumer_keeps_an_unrequested_partitions_fetched_messages_and_fetches_nothing_twice(
    kafka_broker, kafka_topic_prefix
):
    from samza_dagster.system.kafka.confluent_consumer import ENVELOPE_OVERHEAD_BYTES

    """The broker answers fetches with runs of one partition's messages; a partition left out of
    polls (its buffer full) used to be paused, which made librdkafka drop its prefetched messages
    and fetch them again. Now they are parked: every message is fetched once."""
    topic = f"{kafka_topic_prefix}-parked"
    config = Config(
        {
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.consumer.bootstrap.servers": kafka_broker.bootstrap_servers,
        }
    )
    create(config, topic, 2)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, linger_ms=20)
    for i in range(6000):
        producer.send(topic, b"m%d" % (i // 2), partition=i % 2)
    producer.flush()
    producer.close()
    consumer = _confluent(kafka_broker, **{"max.poll.records": "100"})
    p0, p1 = SystemStreamPartition(SYSTEM, topic, 0), SystemStreamPartition(SYSTEM, topic, 1)
    consumer.register(p0, "0")
    consumer.register(p1, "0")
    consumer.start()
    try:
        # p1 is not asked for until all of it was fetched (and parked) meanwhile
        p1_parked = 3000 * ENVELOPE_OVERHEAD_BYTES
        first = read(
            consumer,
            [p0],
            lambda got: len(got[p0]) >= 3000 and consumer.metrics_snapshot()["parked_bytes"] >= p1_parked,
        )
        second = read(consumer, [p0, p1], lambda got: len(got[p1]) >= 3000)
        fetched = _fetched_total(consumer, [p0, p1], 6000)
        snapshot = consumer.metrics_snapshot()
    finally:
        consumer.stop()
    assert [int(e.offset) for e in first[p0] + second[p0]] == list(range(3000))
    assert [int(e.offset) for e in second[p1]] == list(range(3000))
    assert snapshot["pauses_for_parking"] == 0 and snapshot["parked_bytes"] == 0
    assert fetched == 6000, f"librdkafka fetched {fetched} messages for 6000"


def test_confluent_consumer_pauses_a_long_unrequested_partition_past_the_cap_so_others_flow(
    kafka_broker, kafka_topic_prefix
):
    """A job that waits for messages queued behind a partition it does not ask for (a bootstrap
    stream behind a flooded input) must get them: past park.max.bytes and a moment with no
    parked partition asked for, the parked ones are paused — and nothing is lost."""
    flood, wanted = f"{kafka_topic_prefix}-flood", f"{kafka_topic_prefix}-wanted"
    config = Config(
        {
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.consumer.bootstrap.servers": kafka_broker.bootstrap_servers,
        }
    )
    create(config, flood, 1)
    create(config, wanted, 1)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, linger_ms=20)
    for i in range(10_000):  # 10 MB: more than one fetch response of the broker
        producer.send(flood, b"%-1000d" % i, partition=0)
    producer.flush()
    consumer = _confluent(kafka_broker, **{"park.max.bytes": "20000", "max.poll.records": "100"})
    f0, w0 = SystemStreamPartition(SYSTEM, flood, 0), SystemStreamPartition(SYSTEM, wanted, 0)
    consumer.register(f0, "0")
    consumer.register(w0, "0")
    consumer.start()
    try:
        # the flood is never asked for: it is parked up to the cap, the rest waits in librdkafka's
        # queue, and the wanted messages, sent only now, are queued behind it
        deadline = time.monotonic() + 30
        while consumer.metrics_snapshot()["parked_bytes"] <= 20_000:
            assert time.monotonic() < deadline, "the flood was not fetched"
            assert not consumer.poll([w0], 0.1)
        for i in range(50):
            producer.send(wanted, b"w%d" % i, partition=0)
        producer.flush()
        got = read(consumer, [w0], lambda got: len(got[w0]) >= 50)
        assert consumer.metrics_snapshot()["pauses_for_parking"] >= 1
        rest = read(consumer, [f0, w0], lambda got: len(got[f0]) >= 10_000)
    finally:
        consumer.stop()
    producer.close()
    assert [e.message for e in got[w0]] == [b"w%d" % i for i in range(50)]
    assert [int(e.offset) for e in rest[f0]] == list(range(10_000)), "the paused partition lost or repeated messages"
    assert not rest[w0]
