"""The ``samza`` Spark data source on the Kafka system, against Apache Kafka (support/kafka_broker.py).

tests/spark/test_spark_datasource.py covers the data source on the log system; this file runs the
same paths through the Kafka system: a 4-partition topic read into a DataFrame (per-partition
counts, order, offsets, key/value bytes), offset ranges, a DataFrame written back to Kafka
(with its partition column, and re-keyed onto another partition count: murmur2 as Kafka's
default partitioner), and a missing topic.

Every topic is produced with the clients' default batching; a read's default end is the upcoming
offset (Kafka's high watermark).

One Spark session for the module (a session costs 10-20 s here); one topic of a few thousand
records produced once for the read tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from samza_dagster.config import Config
from samza_dagster.spark import get_or_create_spark, read_options
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream, system_factory
from samza_dagster.system.partitioner import partition_for_key
from support.kafka_broker import KafkaBroker
from support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

SYSTEM = "kafka"
PARTITIONS = 4
RECORDS = 4_000
BASE_TS = 1_700_000_000_000
COLUMNS = ["partition", "offset", "key", "value", "timestamp"]
#: Kafka's own murmur2 test vectors (clients/.../UtilsTest.testMurmur2, Java's signed ints):
#: an oracle for "co-partitions with Java clients" independent of any Python implementation.
JAVA_MURMUR2 = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536, b"abc": 479470107}

Row = tuple[int, bytes | None, bytes | None, int]  # (offset, key, value, timestamp)


@pytest.fixture(scope="module")
def spark():
    session = get_or_create_spark(master="local[2]", app_name="test-spark-datasource-kafka")
    yield session
    session.stop()


class KafkaTopics:
    """Topics on the session broker under one prefix, and the Kafka system's own clients."""

    def __init__(self, broker: KafkaBroker, prefix: str) -> None:
        self.prefix = prefix
        self.config = Config(
            {
                f"systems.{SYSTEM}.samza.factory": "kafka",
                f"systems.{SYSTEM}.consumer.bootstrap.servers": broker.bootstrap_servers,
            }
        )
        self.factory = system_factory(self.config, SYSTEM)
        self.admin = self.factory.get_admin(SYSTEM, self.config)

    def name(self, suffix: str) -> str:
        return f"{self.prefix}-{suffix}"

    def create(self, suffix: str, partitions: int) -> str:
        topic = self.name(suffix)
        assert self.admin.create_stream(StreamSpec(topic, topic, SYSTEM, partitions)) is True
        return topic

    def produce(self, topic: str, envelopes: Iterator[OutgoingMessageEnvelope]) -> None:
        producer = self.factory.get_producer(SYSTEM, self.config)
        producer.register("test")
        producer.start()
        try:
            for env in envelopes:
                producer.send("test", env)
            producer.flush("test")
        finally:
            producer.stop()

    def upcoming(self, topic: str) -> dict[int, int]:
        meta = self.admin.get_system_stream_metadata([topic])[topic]
        return {p: int(m.upcoming_offset) for p, m in meta.partitions.items()}

    def options(self, topic: str) -> dict[str, str]:
        # Through the JSON ``config`` option: Spark lower-cases option names, not values.
        return read_options(SYSTEM, topic, self.config)


@pytest.fixture(scope="module")
def kafka(kafka_broker: KafkaBroker) -> Iterator[KafkaTopics]:
    import uuid

    topics = KafkaTopics(kafka_broker, f"t-spark-ds-{uuid.uuid4().hex[:8]}")
    yield topics
    topics.admin.close()


def _record(i: int) -> tuple[bytes | None, bytes | None, int | None]:
    """The i-th record: (key, value, explicit partition or None). Keys repeat (500 users) and
    values are arbitrary bytes (NUL, 0xFF, empty); a few edge records go to explicit partitions:
    a tombstone (null value), a null key, an empty key, every byte value."""
    ts_tag = b"%d|" % i
    if i == 1000:
        return b"tombstone-key", None, 0
    if i == 2000:
        return None, ts_tag + b"no key", 1
    if i == 3000:
        return b"", ts_tag + b"empty key", 2
    if i == 3500:
        return b"\x00\xff\x00", ts_tag + bytes(range(256)), 3
    key = b"user-%d\x00\xff" % (i % 500)
    value = ts_tag + bytes((i * 7 + j) % 256 for j in range(i % 13))
    return key, value, None


@pytest.fixture(scope="module")
def clicks(kafka: KafkaTopics) -> tuple[str, dict[int, list[Row]]]:
    """A 4-partition topic of RECORDS records and what each partition must hold, in order."""
    topic = kafka.create("clicks", PARTITIONS)
    stream = SystemStream(SYSTEM, topic)
    expected: dict[int, list[Row]] = {p: [] for p in range(PARTITIONS)}
    envelopes = []
    for i in range(RECORDS):
        key, value, partition = _record(i)
        target = partition if partition is not None else partition_for_key(key, PARTITIONS)
        expected[target].append((len(expected[target]), key, value, BASE_TS + i))
        envelopes.append(OutgoingMessageEnvelope(stream, value, key=key, partition=partition, event_time=BASE_TS + i))
    kafka.produce(topic, iter(envelopes))
    # batched production: the high watermark is every partition's record count
    assert kafka.upcoming(topic) == {p: len(rows) for p, rows in expected.items()}
    return topic, expected


def _by_partition(rows) -> dict[int, list[Row]]:
    out: dict[int, list[Row]] = {}
    for r in sorted(rows, key=lambda r: (r["partition"], r["offset"])):
        out.setdefault(r["partition"], []).append(
            (
                r["offset"],
                None if r["key"] is None else bytes(r["key"]),
                None if r["value"] is None else bytes(r["value"]),
                r["timestamp"],
            )
        )
    return out


def test_read_a_four_partition_topic_with_counts_order_offsets_and_bytes_as_produced(spark, kafka, clicks):
    topic, expected = clicks
    df = spark.read.format("samza").options(**kafka.options(topic)).load()
    assert df.columns == COLUMNS
    assert df.rdd.getNumPartitions() == PARTITIONS  # one Spark partition per topic partition
    got = _by_partition(df.collect())
    counts = {p: len(rows) for p, rows in got.items()}
    assert counts == {p: len(rows) for p, rows in expected.items()}
    assert sum(counts.values()) == RECORDS
    assert all(counts.values())  # every partition got keys: the per-partition checks mean something
    for p in range(PARTITIONS):
        assert got[p] == expected[p], f"partition {p} differs from what was produced"
    # The edge records came through as bytes/None exactly (not b"" for None or the reverse).
    flat = {ts - BASE_TS: (key, value) for rows in got.values() for _o, key, value, ts in rows}
    assert flat[1000] == (b"tombstone-key", None)
    assert flat[2000] == (None, b"2000|no key")
    assert flat[3000] == (b"", b"3000|empty key")
    assert flat[3500] == (b"\x00\xff\x00", b"3500|" + bytes(range(256)))


def test_offset_ranges_on_kafka_select_exactly_those_records(spark, kafka, clicks):
    topic, expected = clicks

    def read(**options) -> dict[int, list[Row]]:
        reader = spark.read.format("samza").options(**kafka.options(topic))
        for k, v in options.items():
            reader = reader.option(k, v)
        return _by_partition(reader.load().collect())

    assert read(startOffset="10", endOffset="20") == {p: expected[p][10:20] for p in range(PARTITIONS)}
    upcoming = {p: len(rows) for p, rows in expected.items()}
    tail_start = upcoming[2] - 7
    assert read(startOffset=json.dumps({"2": tail_start}), endOffset="upcoming", partitions="2") == {
        2: expected[2][tail_start:]
    }
    assert read(partitions="1,3", endOffset=json.dumps({"3": 5})) == {1: expected[1], 3: expected[3][:5]}
    assert read(startOffset="oldest", endOffset="1000000000") == expected  # end capped at upcoming
    empty = spark.read.format("samza").options(**kafka.options(topic)).option("startOffset", "upcoming").load()
    assert empty.count() == 0


def test_write_a_dataframe_to_kafka_and_read_it_back(spark, kafka, clicks, tmp_path):
    topic, expected = clicks
    df = spark.read.format("samza").options(**kafka.options(topic)).load()

    # 1. With its partition column: honoured, and each Spark task writes its partition in order,
    #    so the copy is the source record for record (offsets too: both start at 0).
    copy = kafka.create("copy", PARTITIONS)
    df.write.format("samza").options(**kafka.options(copy)).mode("append").save()
    copied = _by_partition(spark.read.format("samza").options(**kafka.options(copy)).load().collect())
    assert copied == expected

    # 2. Re-keyed onto 3 partitions (no partition column): each keyed row goes where Kafka's
    #    default partitioner puts its key. Java's murmur2 test vectors ride along as keys.
    rekeyed = kafka.create("rekeyed", 3)
    java_rows = spark.createDataFrame(
        [(key, b"java|" + key, BASE_TS + RECORDS + n) for n, key in enumerate(JAVA_MURMUR2)],
        "key BINARY, value BINARY, timestamp LONG",
    )
    report = tmp_path / "report.json"
    (
        df.select("key", "value", "timestamp")
        .unionByName(java_rows)
        .write.format("samza")
        .options(**kafka.options(rekeyed))
        .option("reportPath", str(report))
        .mode("append")
        .save()
    )
    back = _by_partition(spark.read.format("samza").options(**kafka.options(rekeyed)).load().collect())
    total = RECORDS + len(JAVA_MURMUR2)
    assert json.loads(report.read_text()) == {
        "total": total,
        "partitions": {str(p): len(rows) for p, rows in sorted(back.items())},
    }
    assert kafka.upcoming(rekeyed) == {p: len(back.get(p, [])) for p in range(3)}
    where = {ts: (p, key, value) for p, rows in back.items() for _o, key, value, ts in rows}
    assert len(where) == total  # nothing lost, nothing doubled

    # The partition the Kafka system's own producer picks for each key (sent without a
    # partition, read back), and the one Java's murmur2 gives.
    reference = kafka.create("reference", 3)
    keys = sorted({key for p, key, _v in where.values() if key is not None})
    ref_stream = SystemStream(SYSTEM, reference)
    kafka.produce(reference, (OutgoingMessageEnvelope(ref_stream, b"ref", key=k) for k in keys))
    producer_picks = {
        key: p
        for p, rows in _by_partition(
            spark.read.format("samza").options(**kafka.options(reference)).load().collect()
        ).items()
        for _o, key, _v, _t in rows
    }
    assert sorted(producer_picks) == keys
    for n, (key, signed) in enumerate(JAVA_MURMUR2.items()):
        assert where[BASE_TS + RECORDS + n] == ((signed & 0x7FFFFFFF) % 3, key, b"java|" + key)
    source = {ts: (key, value) for rows in expected.values() for _o, key, value, ts in rows}
    for ts, (p, key, value) in where.items():
        if ts in source:
            assert (key, value) == source[ts]
        if key is not None:
            assert p == producer_picks[key], (
                f"key {key!r} written to partition {p}, the producer picks {producer_picks[key]}"
            )
    assert where[BASE_TS + 2000][1:] == (None, b"2000|no key")  # unkeyed: spread, but written once
    # Rows of one Spark task (one source partition) stay in their order within each target partition.
    origin = {ts: (p, off) for p, rows in expected.items() for off, _k, _v, ts in rows}
    for p, rows in back.items():
        seen: dict[int, int] = {}
        for _o, _k, _v, ts in rows:
            if ts in origin:
                src, off = origin[ts]
                assert off > seen.get(src, -1), f"partition {p}: source partition {src} out of order"
                seen[src] = off


def test_a_topic_that_does_not_exist_fails_naming_it(spark, kafka, clicks):
    missing = kafka.name("no-such-topic")
    with pytest.raises(Exception, match=f"stream '{missing}' does not exist on system 'kafka'"):
        spark.read.format("samza").options(**kafka.options(missing)).load()
    df = spark.createDataFrame([(b"k", b"v")], "key BINARY, value BINARY")
    with pytest.raises(Exception, match=f"stream '{missing}' does not exist on system 'kafka'"):
        df.write.format("samza").options(**kafka.options(missing)).mode("append").save()
    topic, _expected = clicks
    with pytest.raises(Exception, match=rf"option \"partitions\" names partitions \[7\] of stream '{topic}'"):
        spark.read.format("samza").options(**kafka.options(topic)).option("partitions", "7").load().count()
    # Nothing was created by asking.
    with pytest.raises(Exception, match="does not exist"):
        kafka.admin.get_system_stream_metadata([missing])


def test_a_topic_ending_in_a_transaction_marker_reads_to_its_end(spark, kafka, kafka_broker):
    """A transactional producer (Kafka Streams / Flink exactly-once, ...) leaves a commit marker
    at the partition's last offset: the upcoming offset counts it, but no consumer ever receives
    it. The read must end once the consumer's position passes the range's end, not wait
    ``pollTimeoutMs`` for a message at offset end - 1 and fail."""
    from kafka import KafkaProducer

    topic = kafka.create("transactional", 2)
    producer = KafkaProducer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        transactional_id=f"{topic}-tx",
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(6):
            producer.send(topic, b"v%d" % i, key=b"k%d" % i, partition=i % 2, timestamp_ms=BASE_TS + i)
        producer.commit_transaction()
    finally:
        producer.close()
    # 3 records + the commit marker each: the transaction coordinator writes the markers after
    # EndTxn returns, so the marker may reach the partition a moment later
    wait_until(lambda: kafka.upcoming(topic) == {0: 4, 1: 4}, 30, "the commit markers")
    df = spark.read.format("samza").options(**kafka.options(topic)).option("pollTimeoutMs", "8000").load()
    assert _by_partition(df.collect()) == {
        p: [(n, b"k%d" % i, b"v%d" % i, BASE_TS + i) for n, i in enumerate(range(p, 6, 2))] for p in (0, 1)
    }
