"""Exactly-once writes of the ``samza`` data source on the embedded log (option
``transactionalId``; samza_dagster/spark/transactional.py): a write killed anywhere and launched
again lands each record once for a ``read_committed`` reader, and a write launched after it
committed writes nothing.

Real Spark (one ``local[2]`` session for the module; the kill of the Spark-running process starts
its own in a subprocess), real SQLite files. Faults come from tests/spark_write_faults.py.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.spark import get_or_create_spark, read_options, resend_to_batch_stream
from samza_dagster.spark.transactional import STATE_STREAM, SparkWriteTransaction
from samza_dagster.system.log import LogSystemFactory, transactions
from samza_dagster.system.log.storage import open_stream
from samza_dagster.system.log.transactions import ProducerFencedError
from samza_dagster.system.log.two_phase import TransactionCoordinator
from support.log_reading import read_partition
from tests.spark_write_faults import run_until

pytestmark = pytest.mark.spark

RECORDS = 2_000
FAULTS = "tests.spark_write_faults:FaultyLogSystemFactory"


@pytest.fixture(scope="module")
def spark():
    session = get_or_create_spark(master="local[2]", app_name="test-spark-exactly-once")
    yield session
    session.stop()


@pytest.fixture
def config(tmp_path) -> Config:
    """A log with ``src`` (2 partitions, RECORDS keyed records r0..) and an empty ``batch`` (3)."""
    cfg = Config(
        {
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "systems.log.log.linger.ms": "0",
        }
    )
    factory = LogSystemFactory()
    admin = factory.get_admin("log", cfg)
    admin.create_stream(StreamSpec("src", "src", "log", 2))
    admin.create_stream(StreamSpec("batch", "batch", "log", 3))
    producer = factory.get_producer("log", cfg)
    producer.register("t")
    for i in range(RECORDS):
        producer.send(
            "t",
            OutgoingMessageEnvelope(SystemStream("log", "src"), f"r{i}".encode(), f"k{i % 97}".encode(), None, i % 2),
        )
    producer.stop()
    return cfg


def _faulty(config: Config, tmp_path: Path, phase: str, **extra: object) -> Config:
    faults = tmp_path / "faults"
    faults.mkdir(exist_ok=True)
    return config.with_overrides(
        {
            "systems.log.samza.factory": FAULTS,
            "test.fault.phase": phase,
            "test.fault.dir": str(faults),
            **{f"test.fault.{k}": str(v) for k, v in extra.items()},
        }
    )


def _read(config: Config, isolation: str) -> list[str]:
    cfg = config.with_overrides({"systems.log.samza.factory": "log", "systems.log.consumer.isolation.level": isolation})
    return [value for p in range(3) for _, _, value in read_partition(cfg, "log", "batch", p, "0")]


def _open_ranges(config: Config) -> dict[int, int]:
    conn, _ = open_stream("log", config.get_str("systems.log.log.path"), "batch", "FULL", 5.0)
    try:
        transactions.ensure_stream_tables(conn)
        return transactions.last_stable_offsets(conn)
    finally:
        conn.close()


def _resend(spark, config: Config, write_id: str | None) -> dict:
    plain = dict(config.items())
    df = spark.read.format("samza").options(**read_options("log", "src", plain)).load()
    return resend_to_batch_stream(
        df, system="log", stream="batch", config=plain, key_column="key", transactional_id=write_id
    )


def _assert_each_record_once(config: Config) -> None:
    seen = Counter(_read(config, "read_committed"))
    assert seen == Counter(f"r{i}" for i in range(RECORDS))
    # nothing else is left in the stream either: aborted messages are removed, none is open
    assert Counter(_read(config, "read_uncommitted")) == seen
    assert _open_ranges(config) == {}


def test_a_write_whose_task_dies_mid_write_then_launched_again_lands_each_record_once(spark, config, tmp_path):
    faulty = _faulty(config, tmp_path, "exit-after-rows", rows=300, partition=0)
    with pytest.raises(Exception, match="(?i)python worker|exited|crashed|aborted|failed"):
        _resend(spark, faulty, "day-1")
    assert (tmp_path / "faults" / "in-exit-after-rows").exists()
    assert _read(config, "read_committed") == []  # the failed write is invisible, whatever was written

    result = _resend(spark, faulty, "day-1")  # the fault happens once: this launch is clean
    assert result["already_written"] is False and result["total"] == RECORDS
    assert sum(result["partitions"].values()) == RECORDS
    _assert_each_record_once(config)


def test_a_completed_write_launched_again_writes_nothing_and_says_so(spark, config):
    first = _resend(spark, config, "day-2")
    assert first["already_written"] is False and first["total"] == RECORDS
    again = _resend(spark, config, "day-2")
    assert again["already_written"] is True and again["total"] == 0
    assert again["written"] == {"total": RECORDS, "partitions": first["partitions"]}
    assert again["written_at_ms"] <= time.time() * 1000
    # the data source itself (no pre-check by resend_to_batch_stream): the tasks write nothing
    plain = dict(config.items())
    report = Path(config.get_str("systems.log.log.path")).parent / "report.json"
    (
        spark.read.format("samza")
        .options(**read_options("log", "src", plain))
        .load()
        .drop("partition")
        .write.format("samza")
        .options(**read_options("log", "batch", plain))
        .option("transactionalId", "day-2")
        .option("reportPath", str(report))
        .mode("append")
        .save()
    )
    summary = json.loads(report.read_text())
    assert summary["already_written"] is True and summary["written"]["total"] == RECORDS
    _assert_each_record_once(config)
    # another write id is another write
    assert _resend(spark, config, "day-3")["total"] == RECORDS
    assert len(_read(config, "read_committed")) == 2 * RECORDS


SCRIPT = """
import json, sys
from samza_dagster.spark import get_or_create_spark, read_options, resend_to_batch_stream
config = json.loads(sys.argv[1])
spark = get_or_create_spark(master="local[2]", app_name="killed-write")
df = spark.read.format("samza").options(**read_options("log", "src", config)).load()
resend_to_batch_stream(df, system="log", stream="batch", config=config, key_column="key", transactional_id=sys.argv[2])
"""


def test_a_spark_driver_killed_after_every_task_prepared_then_launched_again_lands_each_record_once(
    spark, config, tmp_path
):
    # partition 1's task prepared (all its rows written, open) and pauses before reporting; partition
    # 0's task finished: the driver never commits — then driver, JVM and workers are SIGKILLed
    faulty = _faulty(config, tmp_path, "pause-prepared", partition=1)
    run_until(SCRIPT, [json.dumps(dict(faulty.items())), "day-4"], tmp_path / "faults" / "in-pause-prepared")
    written_open = _read(config, "read_uncommitted")
    assert len(written_open) >= RECORDS // 2  # at least the paused task's half is in the stream, open
    assert _read(config, "read_committed") == []

    result = _resend(spark, config, "day-4")
    assert result["already_written"] is False and result["total"] == RECORDS
    _assert_each_record_once(config)


# -- the protocol without Spark: the states a kill leaves, reproduced exactly ---------------------
def _prepare(config: Config, producer_id: str, values: list[str]):
    producer = LogSystemFactory().get_producer("log", config)
    producer.init_transactions(producer_id, STATE_STREAM)
    for v in values:
        producer.send("t", OutgoingMessageEnvelope(SystemStream("log", "batch"), v.encode(), None, None, 0))
    prepared = producer.prepare_transaction()
    producer.stop()  # a prepared transaction stays open: the coordinator settles it
    return prepared


def test_a_coordinator_killed_between_its_commit_point_and_the_markers_rolls_forward_at_the_next_launch(config):
    write = SparkWriteTransaction(config, "log", "day-5")
    assert write.begin() is None
    prepared = [_prepare(config, write.task_producer_id(p, 0), [f"r{p}-{i}" for i in range(5)]) for p in (0, 1)]
    with TransactionCoordinator("log", config, STATE_STREAM) as coordinator:
        assert coordinator.commit(prepared, {"day-5": {"total": 10, "partitions": {"0": 10}}})
    # killed here: committed, markers not written — readers still wait at the first open message
    assert _read(config, "read_committed") == []
    record = SparkWriteTransaction(config, "log", "day-5").begin()  # the re-launch
    assert record is not None and record.value["total"] == 10
    assert sorted(_read(config, "read_committed")) == sorted(f"r{p}-{i}" for p in (0, 1) for i in range(5))
    assert _open_ranges(config) == {}


def test_a_relaunch_fences_the_earlier_launchs_tasks_and_a_concurrent_commit_of_the_same_write_wins_once(config):
    old = SparkWriteTransaction(config, "log", "day-6")
    old.begin()
    stale = _prepare(config, old.task_producer_id(0, 0), ["old"])
    new = SparkWriteTransaction(config, "log", "day-6")
    assert new.begin() is None  # removes the old launch's open rows and fences its producer
    assert _read(config, "read_uncommitted") == []
    with pytest.raises(ProducerFencedError, match="day-6/0.0"):
        old.commit([stale], {"total": 1, "partitions": {"0": 1}})
    fresh = _prepare(config, new.task_producer_id(0, 0), ["new"])
    assert new.commit([fresh], {"total": 1, "partitions": {"0": 1}}) is None
    # a second launch that prepared before the first committed: its commit finds the id and aborts
    late = SparkWriteTransaction(config, "log", "day-6")
    other = _prepare(config, late.task_producer_id(1, 0), ["late"])
    earlier = late.commit([other], {"total": 1, "partitions": {"0": 1}})
    assert earlier is not None and earlier.key == "day-6"
    assert _read(config, "read_uncommitted") == ["new"]


def test_an_exactly_once_write_to_a_system_without_transactions_is_a_config_error_naming_the_key(spark, config):
    kafka = config.with_overrides(
        {"systems.kafka.samza.factory": "kafka", "systems.kafka.producer.bootstrap.servers": "127.0.0.1:9"}
    )
    with pytest.raises(ConfigError, match="systems.kafka.samza.factory") as info:
        SparkWriteTransaction(kafka, "kafka", "day-7")
    assert info.value.key == "systems.kafka.samza.factory"
    df = spark.createDataFrame([("v",)], "value STRING")
    with pytest.raises(ConfigError, match="transactionalId.*system 'kafka'.*'kafka'"):
        resend_to_batch_stream(df, system="kafka", stream="t", config=dict(kafka.items()), transactional_id="day-7")
