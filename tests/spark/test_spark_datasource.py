"""The ``samza`` Spark data source and the backfill building block, on the embedded log.

One Spark session for the whole module (a session costs 7-14 s on the dev machine)."""

from __future__ import annotations

import json

import pytest

from samza_dagster.config import Config
from samza_dagster.spark import get_or_create_spark, read_options, resend_to_batch_stream
from samza_dagster.system import (
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    system_factory,
)
from samza_dagster.system.partitioner import partition_for_key

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    session = get_or_create_spark(master="local[2]", app_name="test-spark-datasource")
    yield session
    session.stop()


@pytest.fixture()
def log(tmp_path):
    config = Config({"systems.log.samza.factory": "log", "systems.log.log.path": str(tmp_path / "log")})
    factory = system_factory(config, "log")
    admin = factory.get_admin("log", config)

    class Log:
        def __init__(self):
            self.config = config

        def create(self, stream, partitions):
            admin.create_stream(StreamSpec(stream, stream, "log", partitions))

        def produce(self, stream, envelopes):
            producer = factory.get_producer("log", config)
            producer.register("test")
            producer.start()
            for env in envelopes:
                producer.send("test", env)
            producer.flush("test")
            producer.stop()

        def read_all(self, stream):
            """Every partition's (offset, key, value, timestamp) in order, by the raw consumer."""
            meta = admin.get_system_stream_metadata([stream])[stream]
            consumer = factory.get_consumer("log", config)
            ssps = [SystemStreamPartition("log", stream, p) for p in meta.partitions]
            for ssp in ssps:
                consumer.register(ssp, "0")
            consumer.start()
            out = {ssp.partition: [] for ssp in ssps}
            wanted = {p: int(m.upcoming_offset) for p, m in meta.partitions.items()}
            while any(len(out[p]) < wanted[p] for p in out):
                for ssp, envs in consumer.poll(ssps, 0.2).items():
                    out[ssp.partition].extend((int(e.offset), e.key, e.message, e.event_time) for e in envs)
            consumer.stop()
            return out

        def options(self, stream):
            return read_options("log", stream, config)

    yield Log()
    admin.stop()


def test_read_100k_rows_from_four_partitions_and_write_them_back_out_in_order(spark, log):
    log.create("clicks", 4)
    log.create("clicks-copy", 4)
    source = SystemStream("log", "clicks")
    log.produce(
        "clicks",
        (
            OutgoingMessageEnvelope(source, b"v%d" % i, key=b"user-%d" % (i % 1000), event_time=1_700_000_000_000 + i)
            for i in range(100_000)
        ),
    )
    df = spark.read.format("samza").options(**log.options("clicks")).load()
    assert df.columns == ["partition", "offset", "key", "value", "timestamp"]
    assert df.rdd.getNumPartitions() == 4
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    expected = log.read_all("clicks")
    assert counts == {p: len(rows) for p, rows in expected.items()}
    assert sum(counts.values()) == 100_000

    df.write.format("samza").options(**log.options("clicks-copy")).mode("append").save()
    copied = log.read_all("clicks-copy")
    # The partition column is honoured and each Spark task writes its stream partition in order.
    assert copied == expected


def test_offset_ranges_global_per_partition_and_partition_subset(spark, log):
    log.create("ranged", 2)
    stream = SystemStream("log", "ranged")
    log.produce("ranged", (OutgoingMessageEnvelope(stream, b"%d" % i, partition=i % 2) for i in range(200)))

    def offsets(**options):
        reader = spark.read.format("samza").options(**log.options("ranged"))
        for k, v in options.items():
            reader = reader.option(k, v)
        rows = reader.load().select("partition", "offset").collect()
        by: dict[int, list[int]] = {}
        for r in rows:
            by.setdefault(r["partition"], []).append(r["offset"])
        return {p: (min(v), max(v), len(v)) for p, v in by.items()}

    assert offsets(startOffset="10", endOffset="20") == {0: (10, 19, 10), 1: (10, 19, 10)}
    assert offsets(startOffset=json.dumps({"1": 95}), endOffset="upcoming") == {0: (0, 99, 100), 1: (95, 99, 5)}
    assert offsets(partitions="1", endOffset=json.dumps({"1": 3})) == {1: (0, 2, 3)}
    assert offsets(endOffset="100000") == {0: (0, 99, 100), 1: (0, 99, 100)}  # capped at upcoming
    empty = spark.read.format("samza").options(**log.options("ranged")).option("startOffset", "upcoming").load()
    assert empty.count() == 0


def test_reading_a_stream_that_does_not_exist_fails_at_load_naming_it(spark, log):
    with pytest.raises(Exception, match="stream 'no-such-stream' does not exist on system 'log'"):
        spark.read.format("samza").options(**log.options("no-such-stream")).load()
    log.create("exists", 1)
    df = spark.createDataFrame([(b"a",)], "value BINARY")
    with pytest.raises(Exception, match="stream 'missing-out' does not exist on system 'log'"):
        df.write.format("samza").options(**log.options("missing-out")).mode("append").save()
    with pytest.raises(Exception, match="append-only"):
        df.write.format("samza").options(**log.options("exists")).mode("overwrite").save()


def test_bad_offset_option_names_the_stream_and_partition(spark, log):
    log.create("bad-range", 2)
    with pytest.raises(Exception, match=r"option \"startOffset\" names partitions \[7\] of stream 'bad-range'"):
        spark.read.format("samza").options(**log.options("bad-range")).option("startOffset", '{"7": 1}').load().count()


def test_json_values_decode_into_columns_of_a_user_schema(spark, log):
    log.create("events", 2)
    stream = SystemStream("log", "events")
    log.produce(
        "events",
        (
            OutgoingMessageEnvelope(stream, json.dumps({"user": f"u{i}", "amount": i}).encode(), key=f"u{i}".encode())
            for i in range(50)
        ),
    )
    rows = (
        spark.read.format("samza")
        .options(**log.options("events"))
        .schema("partition INT, offset LONG, user STRING, amount LONG")
        .option("serde", "json")
        .load()
        .orderBy("amount")
        .collect()
    )
    assert [(r["user"], r["amount"]) for r in rows] == [(f"u{i}", i) for i in range(50)]
    assert all(r["partition"] == partition_for_key(f"u{r['amount']}".encode(), 2) for r in rows)


def test_a_files_stream_reads_one_spark_partition_per_stream_partition_with_offsets_as_columns(spark, tmp_path):
    """Partition 0: two Parquet files (the second with a column the first lacks: null there, left
    out); partition 1: JSON lines. Each row once, at its files offset; an Iceberg table is refused
    at load, naming Iceberg's own Spark runtime."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    events = tmp_path / "lake" / "events"
    events.mkdir(parents=True)
    pq.write_table(
        pa.table({"id": pa.array([0, 1, 2], pa.int32()), "page": ["a", "b", "c"]}), events / "part-0-a.parquet"
    )
    pq.write_table(
        pa.table({"id": pa.array([3, 4], pa.int32()), "page": ["d", "e"], "x": [1, 2]}), events / "part-0-b.parquet"
    )
    (events / "part-1-a.jsonl").write_text(
        "".join(json.dumps({"id": 10 + i, "page": f"j{i}"}) + "\n" for i in range(4))
    )
    config = {
        "systems.files.samza.factory": "files",
        "systems.files.files.root": str(tmp_path / "lake"),
        "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
    }
    df = spark.read.format("samza").options(**read_options("files", "events", config)).load()
    assert df.columns == ["partition", "offset", "id", "page"]  # the first file's columns
    assert dict(df.dtypes)["id"] == "int" and dict(df.dtypes)["offset"] == "string"
    assert df.rdd.getNumPartitions() == 2
    rows = sorted((r["partition"], r["offset"], r["id"], r["page"]) for r in df.collect())
    assert rows == [
        (0, "part-0-a.parquet:0", 0, "a"),
        (0, "part-0-a.parquet:1", 1, "b"),
        (0, "part-0-a.parquet:2", 2, "c"),
        (0, "part-0-b.parquet:0", 3, "d"),
        (0, "part-0-b.parquet:1", 4, "e"),
        *[(1, f"part-1-a.jsonl:{i}", 10 + i, f"j{i}") for i in range(4)],
    ]
    one = spark.read.format("samza").options(**read_options("files", "events", config)).option("partitions", "1")
    picked = one.schema("partition INT, offset STRING, page STRING, x LONG").load().collect()
    assert [(r["page"], r["x"]) for r in picked] == [(f"j{i}", None) for i in range(4)]

    iceberg = {
        "systems.ice.samza.factory": "iceberg",
        "systems.ice.iceberg.catalog.type": "sql",
        "systems.ice.iceberg.catalog.uri": f"sqlite:///{tmp_path}/catalog.db",
        "systems.ice.iceberg.catalog.warehouse": f"file://{tmp_path}/warehouse",
    }
    with pytest.raises(
        Exception, match=r"'clicks' of system 'ice' is an Iceberg table \(samza.clicks\).*iceberg_session"
    ):
        spark.read.format("samza").options(**read_options("ice", "clicks", iceberg)).load()


def test_backfill_resends_the_selected_past_records_into_the_batch_stream(spark, log):
    log.create("orders", 4)
    log.create("orders-batch", 3)
    stream = SystemStream("log", "orders")
    log.produce(
        "orders",
        (
            OutgoingMessageEnvelope(stream, json.dumps({"id": i, "day": i % 7}).encode(), key=b"%d" % i, event_time=i)
            for i in range(2_000)
        ),
    )
    past = (
        spark.read.format("samza")
        .options(**log.options("orders"))
        .schema("partition INT, offset LONG, key BINARY, timestamp LONG, id LONG, day LONG")
        .option("serde", "json")
        .option("endOffset", "400")
        .load()
        .where("day = 3")
    )
    expected_ids = {row["id"] for row in past.select("id").collect()}
    result = resend_to_batch_stream(
        past, system="log", stream="orders-batch", config=log.config, key_column="key", value_columns=["id", "day"]
    )
    assert result["total"] == len(expected_ids) > 0
    sent = log.read_all("orders-batch")
    assert {p: len(rows) for p, rows in sent.items() if rows} == result["partitions"]
    got = set()
    for partition, rows in sent.items():
        for _offset, key, value, timestamp in rows:
            item = json.loads(value)
            assert item["day"] == 3 and timestamp == item["id"] and key == b"%d" % item["id"]
            assert partition == partition_for_key(key, 3)  # partitioned as the producer would
            got.add(item["id"])
    assert got == expected_ids


def test_session_helper_runs_workers_on_this_interpreter_with_the_ui_off(spark):
    import os
    import sys

    assert os.environ["PYSPARK_PYTHON"] == sys.executable == os.environ["PYSPARK_DRIVER_PYTHON"]
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    # A second call returns the running session with the data source still registered.
    assert get_or_create_spark({"spark.sql.shuffle.partitions": "3"}) is spark
    assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
