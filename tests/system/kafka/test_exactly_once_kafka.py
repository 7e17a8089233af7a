"""Exactly-once on Kafka (issue 30): with ``job.processing.guarantee=exactly-once`` a container
writes its outputs, changelog and checkpoints in transactions of the Kafka client's transactional
producer (librdkafka's or kafka-python's: every test runs on both), against Apache Kafka
(support/kafka_broker.py).

What these tests pin: a ``read_committed`` reader never sees an open transaction's messages (the
last stable offset) nor an aborted one's, commit markers take offsets, a newer producer with the
same transactional id fences the older one, and a zombie container's commit is refused with
PRODUCER_FENCED. The SIGKILL crash tests run in tests/reliability/test_reliability_exactly_once.py.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from samza_dagster.cli.streams_tool import tail
from samza_dagster.config import Config
from samza_dagster.container.container import SamzaContainer
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.serde import LongSerde, StringSerde
from samza_dagster.storage.kv import RocksDBRawStore
from samza_dagster.system.factories import system_factory
from samza_dagster.system.kafka.errors import KafkaProducerFencedError
from samza_dagster.task.api import InitableTask, StreamTask
from tests.apps.harness import create_stream, job_model, produce, read_checkpoints
from tests.reliability.test_reliability_exactly_once import PausedInCommit

MESSAGES = 240
PARTITIONS = 2
WORDS = ["ant", "bee", "cat", "dog", "eel"]


class CountAndEcho(StreamTask, InitableTask):
    """Counts words in the ``counts`` store and sends each input's id to ``test.output``."""

    def init(self, context):
        self.store = context.get_store("counts")
        self.out = SystemStream("kafka", context.config.get_str("test.output"))

    def process(self, envelope, collector, coordinator):
        msg_id, word = envelope.message.split(":")
        self.store.put(word, (self.store.get(word) or 0) + 1)
        collector.send(OutgoingMessageEnvelope(self.out, msg_id, key=msg_id))


def _job_config(kafka_config: Config, prefix: str, tmp_path: Path) -> Config:
    return kafka_config.with_overrides(
        {
            "job.name": f"eos-{uuid.uuid4().hex[:8]}",
            "job.default.system": "kafka",
            "job.processing.guarantee": "exactly-once",
            "task.inputs": f"kafka.{prefix}-words",
            "task.class": "tests.system.kafka.test_exactly_once_kafka:CountAndEcho",
            "task.commit.ms": "50",
            "systems.kafka.samza.msg.serde": "string",
            "systems.kafka.samza.key.serde": "string",
            f"systems.kafka.streams.{prefix}-words.samza.bounded": "true",
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "long",
            "stores.counts.changelog": f"kafka.{prefix}-counts-changelog",
            "job.logged.store.base.dir": str(tmp_path / "state"),
            "test.output": f"{prefix}-out",
        }
    )


def _read(bootstrap: str, topic: str, isolation: str, wait_s: float = 3.0) -> list[bytes]:
    """Every value a reader with ``isolation`` gets from partition 0 of ``topic`` within ``wait_s``
    (it reads until its position reaches the end offset its own isolation level reports)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                values.append(message.value())
            elif message is None:
                _, end = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
                if consumer.position([tp])[0].offset >= end > 0:
                    break
        return values
    finally:
        consumer.close()


def _end_offset(bootstrap: str, topic: str, isolation: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"ends-{uuid.uuid4().hex}", "isolation.level": isolation}
    )
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)[1]
    finally:
        consumer.close()


def _store_contents(tmp_path: Path, job_name: str) -> dict[str, int]:
    totals: Counter = Counter()
    for task_dir in sorted((tmp_path / "state" / f"{job_name}-1" / "counts").iterdir()):
        raw = RocksDBRawStore(str(task_dir))
        totals.update({StringSerde().from_bytes(k): LongSerde().from_bytes(v) for k, v in raw.all()})
        raw.close()
    return dict(totals)


def test_an_exactly_once_job_on_kafka_commits_outputs_changelog_and_checkpoints_together(
    kafka_broker, kafka_config, kafka_topic_prefix, tmp_path, capsys
):
    config = _job_config(kafka_config, kafka_topic_prefix, tmp_path)
    prefix = kafka_topic_prefix
    create_stream(config, "kafka", f"{prefix}-words", PARTITIONS)
    create_stream(config, "kafka", f"{prefix}-out", 1)
    words = [WORDS[(i * 7) % len(WORDS)] for i in range(MESSAGES)]
    produce(
        config, "kafka", f"{prefix}-words", [(i % PARTITIONS, None, f"m{i}:{w}".encode()) for i, w in enumerate(words)]
    )

    summary = SamzaContainer("0", job_model(config)).run()
    assert summary.status == "completed", summary.one_line()

    bootstrap = kafka_broker.bootstrap_servers
    out = f"{prefix}-out"
    committed = Counter(v.decode() for v in _read(bootstrap, out, "read_committed"))
    assert committed == Counter({f"m{i}": 1 for i in range(MESSAGES)})
    # the output was written in transactions: their commit markers took offsets of their own
    assert _end_offset(bootstrap, out, "read_committed") > MESSAGES
    # read back the way a container does, though the newest offset of the stream is a commit marker
    checkpoints = read_checkpoints(config)
    assert {t: {s.partition: o for s, o in cp.offsets.items()} for t, cp in checkpoints.items()} == {
        f"Partition {p}": {p: str(MESSAGES // PARTITIONS - 1)} for p in range(PARTITIONS)
    }
    expected = dict(Counter(words))
    assert _store_contents(tmp_path, config.get_str("job.name")) == expected
    # `samza-dagster streams tail` reads to the end of the output, past its last commit marker
    assert tail(config, SystemStream("kafka", out), 4) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed and all(line.split("\t")[2].startswith("m") for line in printed), printed

    # a second run restores the store from its changelog (whose newest offset is a marker too),
    # resumes after the checkpoints and has nothing left to do
    (tmp_path / "state").rename(tmp_path / "state-first-run")
    again = SamzaContainer("0", job_model(config)).run()
    assert again.status == "completed", again.one_line()
    assert again.messages_processed == 0, again.one_line()
    assert _store_contents(tmp_path, config.get_str("job.name")) == expected
    assert Counter(v.decode() for v in _read(bootstrap, out, "read_committed")) == committed


def _transactional_producer(config: Config, transactional_id: str):
    producer = system_factory(config, "kafka").get_producer("kafka", config)
    producer.register("test")
    producer.start()
    producer.init_transactions(transactional_id, "unused")
    return producer


def _send(producer, topic: str, values: list[str]) -> None:
    for value in values:
        producer.send("test", OutgoingMessageEnvelope(SystemStream("kafka", topic), value.encode(), partition=0))


def test_read_committed_readers_see_a_transaction_at_its_commit_and_a_zombie_is_fenced(
    kafka_broker, kafka_config, kafka_topic_prefix
):
    config = kafka_config
    topic = f"{kafka_topic_prefix}-out"
    create_stream(config, "kafka", topic, 1)
    bootstrap = kafka_broker.bootstrap_servers
    txn_id = f"container-{uuid.uuid4().hex[:8]}"

    first = _transactional_producer(config, txn_id)
    _send(first, topic, ["a", "b", "c"])
    first.flush("test")  # delivered to the broker, the transaction still open
    assert first.has_open_transaction()
    assert _read(bootstrap, topic, "read_committed", wait_s=1.5) == []
    assert _end_offset(bootstrap, topic, "read_committed") == 0  # the last stable offset
    assert _read(bootstrap, topic, "read_uncommitted") == [b"a", b"b", b"c"]
    first.commit_transaction()
    assert not first.has_open_transaction()
    assert _read(bootstrap, topic, "read_committed") == [b"a", b"b", b"c"]

    # a new instance of the same container takes the id over: the old one can never write again
    second = _transactional_producer(config, txn_id)
    _send(first, topic, ["zombie"])
    with pytest.raises(KafkaProducerFencedError, match=txn_id):
        first.flush("test")
        first.commit_transaction()
    _send(second, topic, ["d"])
    second.commit_transaction()
    second.stop()
    assert _read(bootstrap, topic, "read_committed") == [b"a", b"b", b"c", b"d"]


def test_an_aborted_transaction_is_never_seen_by_a_read_committed_reader(
    kafka_broker, kafka_config, kafka_topic_prefix
):
    config = kafka_config
    topic = f"{kafka_topic_prefix}-out"
    create_stream(config, "kafka", topic, 1)
    producer = _transactional_producer(config, f"container-{uuid.uuid4().hex[:8]}")
    _send(producer, topic, ["aborted"])
    producer.flush("test")
    producer.abort_transaction()
    _send(producer, topic, ["kept"])
    producer.commit_transaction()
    producer.stop()
    assert _read(kafka_broker.bootstrap_servers, topic, "read_committed") == [b"kept"]


def test_a_zombie_container_on_kafka_is_fenced_by_its_new_instance(
    kafka_broker, kafka_config, kafka_topic_prefix, tmp_path
):
    """Container 0 pauses inside a commit (its outputs sent, not committed); a new instance of
    container 0 runs the job to its end; the old one resumes, and its commit is refused."""
    config = _job_config(kafka_config, kafka_topic_prefix, tmp_path)
    prefix = kafka_topic_prefix
    create_stream(config, "kafka", f"{prefix}-words", PARTITIONS)
    create_stream(config, "kafka", f"{prefix}-out", 1)
    produce(config, "kafka", f"{prefix}-words", [(i % PARTITIONS, None, f"m{i}:ant".encode()) for i in range(MESSAGES)])
    zombie = PausedInCommit(SamzaContainer("0", job_model(config)))
    thread = zombie.start()
    in_commit, resume, box = zombie.in_commit, zombie.resume, zombie.box
    assert in_commit.wait(60), "the first container never committed"
    bootstrap = kafka_broker.bootstrap_servers
    assert _read(bootstrap, f"{prefix}-out", "read_committed", wait_s=1.0) == []  # open: nothing readable
    elsewhere = config.with_overrides({"job.logged.store.base.dir": str(tmp_path / "state-elsewhere")})
    summary = SamzaContainer("0", job_model(elsewhere)).run()
    assert summary.status == "completed", summary.one_line()
    resume.set()
    thread.join(60)
    # refused with Kafka's PRODUCER_FENCED (not a timed-out EndTxn)
    assert isinstance(box.get("error"), KafkaProducerFencedError), box
    assert config.get_str("job.name") in str(box["error"])
    # the new instance's checkpoints cover every input; the zombie's never became readable
    checkpoints = read_checkpoints(config)
    assert {t: {s.partition: o for s, o in cp.offsets.items()} for t, cp in checkpoints.items()} == {
        f"Partition {p}": {p: str(MESSAGES // PARTITIONS - 1)} for p in range(PARTITIONS)
    }
