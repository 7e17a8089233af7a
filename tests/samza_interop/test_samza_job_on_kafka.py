"""A Java Samza job and a Python job on Apache Kafka, sharing topics: the Java job is Apache Samza
1.8.0 itself (``SamzaCopyJob.java`` run by Samza's ``LocalApplicationRunner`` with the passthrough
job coordinator, Samza's ``KafkaSystemFactory`` and ``KafkaCheckpointManager``), the Python job is
the engine's (thread runner, CopyTask), both under one job name, so one checkpoint topic.

A job stopped in one resumes in the other from its checkpoints, three times over (Java → Python →
Java, two input partitions), with nothing lost or repeated: the output topic holds every input
message once, each partition's in order.
A Python stage job ends on the intermediate stream a Samza job wrote, and a Samza job on the one
a Python stage job wrote (watermarks and end-of-stream included); a ``set-config`` Samza's
``CoordinatorStreamWriter`` tool writes reaches a running Python job's coordinator; a startpoint
``samza-dagster startpoint set`` wrote moves a Samza job; a stateful job moves both ways with its
store restored from the changelog. One Kafka client for the
Python jobs (confluent; neither format depends on the client); the Java job stops on a message
of the test's choosing in each of its input partitions."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from jobs.stream_helpers import read_stream
from samza_dagster.checkpoint.manager import checkpoint_stream_name
from samza_dagster.config import Config
from samza_dagster.control.messages import EndOfStreamMessage, WatermarkMessage
from samza_dagster.control.serde import IntermediateMessageSerde
from samza_dagster.coordinator import JobCoordinator
from samza_dagster.coordinator.client import fetch_job_model
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.runtime import run_job
from samza_dagster.runtime.startpoints import list_startpoints, set_startpoints
from samza_dagster.serde import JsonSerde
from samza_dagster.startpoint.startpoint import StartpointSpecific
from samza_dagster.system.factories import system_factory
from support.hl_harness import create, read_all
from support.kafka_broker import KafkaCluster
from support.waiting import wait_until
from tests.apps.harness import read_checkpoints
from tests.hl_apps import base
from tests.samza_interop.samza_job import SamzaJob, samza_kafka_properties

pytestmark = pytest.mark.kafka

STOP = "stop"
#: the watermark Samza's CountPipeline gets from its source (2024-03-01T00:00:00Z)
WATERMARK = 1_709_251_200_000


class Shared:
    """One job name, its input and output topics, run by either side."""

    def __init__(self, broker: KafkaCluster, prefix: str, partitions: int = 1) -> None:
        self.name = prefix.replace("-", "_")[-40:]
        self.input = f"{prefix}-in"
        self.output = f"{prefix}-out"
        self.ssp = SystemStreamPartition("kafka", self.input, 0)
        self.partitions = partitions
        self.bootstrap = broker.bootstrap_servers
        self.config = Config(
            {
                "job.name": self.name,
                "job.factory.class": "thread",
                "job.default.system": "kafka",
                "job.coordinator.system": "kafka",
                "systems.kafka.samza.factory": "kafka",
                "systems.kafka.kafka.client": "confluent",
                "systems.kafka.consumer.bootstrap.servers": self.bootstrap,
                "systems.kafka.producer.bootstrap.servers": self.bootstrap,
                "systems.kafka.samza.msg.serde": "string",
                f"systems.kafka.streams.{self.input}.samza.bounded": "true",
                "task.inputs": f"kafka.{self.input}",
                "task.class": "tests.apps.tasks:CopyTask",
                "test.output.system": "kafka",
                "test.output.stream": self.output,
            }
        )
        admin = system_factory(self.config, "kafka").get_admin("kafka", self.config)
        try:
            admin.create_stream(StreamSpec(self.input, self.input, "kafka", partitions))
            admin.create_stream(StreamSpec(self.output, self.output, "kafka", 1))
        finally:
            admin.close()

    def produce(self, *values: str, partition: int = 0) -> None:
        producer = system_factory(self.config, "kafka").get_producer("kafka", self.config)
        producer.register("test")
        producer.start()
        try:
            for value in values:
                producer.send(
                    "test",
                    OutgoingMessageEnvelope(SystemStream("kafka", self.input), value.encode(), partition=partition),
                )
            producer.flush("test")
        finally:
            producer.stop()

    def output_values(self) -> list[str]:
        return [r.value.decode() for r in read_stream(self.config, self.output, system="kafka")]

    def run_java(self, samza_job: SamzaJob, stop: str = STOP, **extra: str) -> str:
        return samza_job.run(
            {
                **samza_kafka_properties(self.bootstrap),
                "job.name": self.name,
                "job.id": "1",
                "task.class": "SamzaCopyJob$CopyTask",
                "task.inputs": f"kafka.{self.input}",
                "app.output.system": "kafka",
                "app.output.stream": self.output,
                "app.stop.value": stop,
                **extra,
            }
        )

    def checkpointed(self, partition: int = 0) -> str:
        """The input offset the checkpoint topic holds last for ``partition``'s task, as the
        engine reads it."""
        ssp = SystemStreamPartition("kafka", self.input, partition)
        return read_checkpoints(self.config)[f"Partition {partition}"].offsets[ssp]


def _m(*indexes: int) -> list[str]:
    return [f"m{i}" for i in indexes]


def test_a_job_stopped_in_samza_resumes_here_and_back_with_nothing_lost_or_repeated(
    kafka_broker: KafkaCluster, kafka_topic_prefix: str, samza_job: SamzaJob
) -> None:
    job = Shared(kafka_broker, kafka_topic_prefix, partitions=2)
    assert checkpoint_stream_name(job.name, "1").startswith("__samza_checkpoint_ver_1_for_")

    def values(p: int, *indexes: int) -> list[str]:
        return [f"p{p}-m{i}" for i in indexes]

    def copied() -> dict[int, list[str]]:
        """The output, per input partition, in the order each partition's task sent it."""
        out = job.output_values()
        assert len(out) == len(set(out)), f"a message was copied twice: {out}"
        return {p: [v for v in out if v.startswith(f"p{p}-")] for p in range(2)}

    # Samza runs first: its two tasks copy m0..m4 and stop at their stop messages (offset 5)
    for p in range(2):
        job.produce(*values(p, *range(5)), STOP, partition=p)
    log = job.run_java(samza_job, **{"app.stop.tasks": "2"})
    for p in range(2):
        assert f"SystemStreamPartition [kafka, {job.input}, {p}] offset 5 is the stop message" in log
    assert copied() == {p: values(p, *range(5)) for p in range(2)}
    assert [job.checkpointed(p) for p in range(2)] == ["5", "5"]  # Samza's checkpoints, read by the engine

    # the engine resumes after them: m5..m9, nothing of Samza's run again
    for p in range(2):
        job.produce(*values(p, *range(5, 10)), partition=p)
    result = run_job(job.config)
    assert result.succeeded, result.summary_line()
    assert result.messages_processed == 10
    assert copied() == {p: values(p, *range(10)) for p in range(2)}
    assert [job.checkpointed(p) for p in range(2)] == ["10", "10"]

    # Samza resumes from the engine's checkpoints: m10..m14, then the next stop messages
    for p in range(2):
        job.produce(*values(p, *range(10, 15)), STOP, partition=p)
    log = job.run_java(samza_job, **{"app.stop.tasks": "2"})
    for p in range(2):
        # Samza's OffsetManager took the engine's checkpoint (offset 10): it starts at 11
        assert f"SystemStreamPartition [kafka, {job.input}, {p}] -> 11" in log
        assert f"SystemStreamPartition [kafka, {job.input}, {p}] offset 16 is the stop message" in log
    assert copied() == {p: values(p, *range(15)) for p in range(2)}
    assert [job.checkpointed(p) for p in range(2)] == ["16", "16"]


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_stage_job_ends_on_the_intermediate_stream_a_samza_job_wrote(
    kafka_broker: KafkaCluster, kafka_topic_prefix: str, samza_job: SamzaJob, tmp_path, partitions: int
) -> None:
    """Samza's ``CountPipeline`` (TwoStageCountApp's first stage in Java, its words on Samza's
    in-memory system in 4 partitions, then a source watermark) writes the intermediate stream on
    Kafka: user messages, the watermark and end-of-stream of each of its 4 tasks on one aggregate
    partition, and — with more than one partition — the watermark and end-of-stream without a
    task name its own downstream task broadcasts to the others. The engine's second stage of TwoStageCountApp, run as a job of its own
    (``app.stage=1``), counts every word once and ends on Samza's end-of-stream messages."""
    name = kafka_topic_prefix[-40:].strip("-")
    words = [f"w{i % 5}" for i in range(40)]
    samza_job.run(
        {
            **samza_kafka_properties(kafka_broker.bootstrap_servers),
            "app.class": "SamzaCopyJob$CountPipeline",
            "job.name": name,
            "job.id": "1",
            "job.default.system": "kafka",
            "job.intermediate.stream.partitions": str(partitions),
            "app.seed.words": ",".join(words),
            "app.seed.partitions": "4",
            "app.seed.watermark": str(WATERMARK),
            "systems.mem.samza.offset.default": "oldest",
        }
    )
    intermediate = f"{name}-1-partition_by-by-word"
    config = base(
        tmp_path,
        name,
        "TwoStageCountApp",
        **{
            "tests.app.system": "kafka",
            "job.default.system": "kafka",
            "job.intermediate.stream.partitions": str(partitions),
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.kafka.client": "confluent",
            "systems.kafka.consumer.bootstrap.servers": kafka_broker.bootstrap_servers,
            "systems.kafka.producer.bootstrap.servers": kafka_broker.bootstrap_servers,
            "streams.words.samza.physical.name": f"{kafka_topic_prefix}-words",
            "streams.counts.samza.physical.name": f"{kafka_topic_prefix}-counts",
        },
    )
    create(config, "words", 4, system="kafka")  # the first stage's input: its 4 tasks are the producers
    create(config, "counts", 3, system="kafka")

    # what Samza's job wrote: every word; each of its tasks' end-of-stream on one partition; one
    # without a task name on each other partition (Samza's aggregator task)
    serde = IntermediateMessageSerde(JsonSerde())
    decoded = [(r.partition, serde.from_bytes(r.value)) for r in read_stream(config, intermediate, system="kafka")]
    assert sorted(m for _, m in decoded if m == 1) == [1] * len(words)
    ends = [(p, m.task_name) for p, m in decoded if isinstance(m, EndOfStreamMessage)]
    named = sorted((p, t) for p, t in ends if t is not None)
    aggregate = named[0][0]
    assert named == [(aggregate, f"Partition {t}") for t in range(4)]
    assert sorted(p for p, t in ends if t is None) == [p for p in range(partitions) if p != aggregate]
    # the source's watermark, passed on alike: each task's on the aggregate partition, then the
    # aggregator's without a task name on the others
    marks = sorted((p, m.task_name or "", m.timestamp) for p, m in decoded if isinstance(m, WatermarkMessage))
    assert marks == sorted(
        [(aggregate, f"Partition {t}", WATERMARK) for t in range(4)]
        + [(p, "", WATERMARK) for p in range(partitions) if p != aggregate]
    )

    result = run_job(config.with_overrides({"app.stage": "1"}))
    assert result.succeeded, result.summary_line()
    assert dict(read_all(config, "counts", system="kafka")) == Counter(words)


def test_a_set_config_samzas_coordinator_stream_writer_writes_reaches_a_live_python_job(
    kafka_broker: KafkaCluster, kafka_topic_prefix: str, samza_job: SamzaJob
) -> None:
    """Samza's own ``CoordinatorStreamWriter`` tool (its ``main``, config from Samza's properties
    loader) writes ``set-config job.container.count=2`` to a running Python job's coordinator
    stream; the job's coordinator picks it up and serves a JobModel of two containers."""
    name = kafka_topic_prefix[-40:].strip("-")
    orders = f"{kafka_topic_prefix}-orders"
    config = Config(
        {
            "job.name": name,
            "job.default.system": "kafka",
            "job.coordinator.system": "kafka",
            "job.coordinator.monitor.interval.ms": "100",
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.kafka.client": "confluent",
            "systems.kafka.consumer.bootstrap.servers": kafka_broker.bootstrap_servers,
            "systems.kafka.producer.bootstrap.servers": kafka_broker.bootstrap_servers,
            "task.inputs": f"kafka.{orders}",
            "task.class": "tests.apps.tasks:CopyTask",
        }
    )
    create(config, orders, 4, system="kafka")
    with JobCoordinator(config) as coordinator:
        model = fetch_job_model(coordinator.url)
        assert model.version == 1 and list(model.containers) == ["0"]
        samza_job.run_main(
            "org.apache.samza.coordinator.stream.CoordinatorStreamWriter",
            {
                **samza_kafka_properties(kafka_broker.bootstrap_servers),
                "job.name": name,
                "job.id": "1",
                "job.coordinator.system": "kafka",
                "job.coordinator.replication.factor": "1",
                "task.inputs": f"kafka.{orders}",
                "task.class": "SamzaCopyJob$CopyTask",
            },
            "--type",
            "set-config",
            "--key",
            "job.container.count",
            "--value",
            "2",
        )
        changed = wait_until(lambda: (m := fetch_job_model(coordinator.url)).version > 1 and m, timeout_s=30)
        assert sorted(changed.containers) == ["0", "1"]
        assert changed.config["job.container.count"] == "2"


def test_the_intermediate_stream_a_python_stage_job_wrote_ends_a_samza_job(
    kafka_broker: KafkaCluster, kafka_topic_prefix: str, samza_job: SamzaJob, tmp_path
) -> None:
    """The reverse: the engine's first stage of TwoStageCountApp (4 tasks) writes the
    intermediate stream (3 partitions) on Kafka, watermarks and end-of-stream messages on every
    partition; Samza's ``WordsPipeline`` (the same graph in Java,
    its own first stage reading nothing) reads it as its second stage, sends every word on once,
    and ends. Samza's tasks are grouped by partition (``GroupBySystemStreamPartitionFactory``):
    the tasks reading the intermediate stream read nothing else, and Samza's own first-stage tasks
    are named apart from the engine's, so only the engine's end-of-stream messages (4 named ones
    on every partition) can end those partitions."""
    name = kafka_topic_prefix[-40:].strip("-")
    words = [f"w{i % 5}" for i in range(40)]
    config = base(
        tmp_path,
        name,
        "TwoStageCountApp",
        **{
            "tests.app.system": "kafka",
            "job.default.system": "kafka",
            "job.intermediate.stream.partitions": "3",
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.kafka.client": "confluent",
            "systems.kafka.consumer.bootstrap.servers": kafka_broker.bootstrap_servers,
            "systems.kafka.producer.bootstrap.servers": kafka_broker.bootstrap_servers,
            "streams.words.samza.physical.name": f"{kafka_topic_prefix}-words",
            "streams.words.samza.bounded": "true",
            "streams.counts.samza.physical.name": f"{kafka_topic_prefix}-counts",
        },
    )
    create(config, "words", 4, system="kafka")
    create(config, "counts", 3, system="kafka")
    java_words = f"{kafka_topic_prefix}-java-words"
    create(config, java_words, 1, system="kafka")
    producer = system_factory(config, "kafka").get_producer("kafka", config)
    producer.register("test")
    producer.start()
    try:
        for i, word in enumerate(words):
            envelope = OutgoingMessageEnvelope(
                SystemStream("kafka", f"{kafka_topic_prefix}-words"), json.dumps(word).encode(), partition=i % 4
            )
            producer.send("test", envelope)
        producer.flush("test")
    finally:
        producer.stop()
    result = run_job(config.with_overrides({"app.stage": "0", "task.watermark.interval.ms": "1"}))
    assert result.succeeded, result.summary_line()

    intermediate = f"{name}-1-partition_by-by-word"
    serde = IntermediateMessageSerde(JsonSerde())
    decoded = [(r.partition, serde.from_bytes(r.value)) for r in read_stream(config, intermediate, system="kafka")]
    ends = sorted((p, m.task_name) for p, m in decoded if isinstance(m, EndOfStreamMessage))
    # watermarks from the messages' event times (Kafka's record timestamps), published every 1 ms
    marks = [m for _, m in decoded if isinstance(m, WatermarkMessage)]
    assert marks and {m.task_name for m in marks} <= {f"Partition {t}" for t in range(4)}
    assert ends == [(p, f"Partition {t}") for p in range(3) for t in range(4)]

    log = samza_job.run(
        {
            **samza_kafka_properties(kafka_broker.bootstrap_servers),
            "app.class": "SamzaCopyJob$WordsPipeline",
            "job.name": name,
            "job.id": "1",
            "job.default.system": "kafka",
            "job.intermediate.stream.partitions": "3",
            "job.systemstreampartition.grouper.factory": (
                "org.apache.samza.container.grouper.stream.GroupBySystemStreamPartitionFactory"
            ),
            "app.seed.words": "",
            "app.seed.partitions": "4",
            "app.output.stream": java_words,
            "systems.mem.samza.offset.default": "oldest",
        }
    )
    assert "status=SuccessfulFinish" in log
    sent = [r.value.decode() for r in read_stream(config, java_words, system="kafka")]
    assert Counter(sent) == Counter(words)


def test_a_startpoint_samza_dagster_sets_applies_in_a_samza_job(
    kafka_broker: KafkaCluster, kafka_topic_prefix: str, samza_job: SamzaJob
) -> None:
    """``samza-dagster startpoint set`` writes a startpoint; the engine's job coordinator fans it
    out (Samza's passthrough coordinator does not fan out); a Samza job whose metadata store is its
    coordinator stream starts there (its ``OffsetManager`` reads the fan-out) ahead of its
    checkpoint, and its commit removes the startpoint where the engine looks."""
    job = Shared(kafka_broker, kafka_topic_prefix)
    java_metadata = {
        "app.metadata.store": "coordinator-stream",
        "job.coordinator.system": "kafka",
        "job.coordinator.replication.factor": "1",
    }
    job.produce(*_m(*range(5)), "stop1")
    job.run_java(samza_job, "stop1", **java_metadata)
    assert job.output_values() == _m(*range(5))
    assert job.checkpointed() == "5"

    result = set_startpoints(job.config, job.input, StartpointSpecific("2"))
    assert result.offsets == {job.ssp: "2"}
    with JobCoordinator(job.config):  # builds the JobModel: the startpoint goes to task Partition 0
        pass
    assert [str(k) for k in list_startpoints(job.config)] == [f"kafka.{job.input} partition 0 of task 'Partition 0'"]

    job.produce("m6", "stop2")
    log = job.run_java(samza_job, "stop2", **java_metadata)
    assert f"Map(SystemStreamPartition [kafka, {job.input}, 0] -> 2)" in log  # Samza starts at the startpoint
    assert job.output_values() == [*_m(*range(5)), *_m(2, 3, 4), "stop1", "m6"]
    assert job.checkpointed() == "7"
    assert list_startpoints(job.config) == {}  # Samza's commit removed it


def test_a_stateful_job_moves_between_samza_and_here_with_its_store_restored_from_the_changelog(
    kafka_broker: KafkaCluster, kafka_topic_prefix: str, samza_job: SamzaJob, tmp_path
) -> None:
    """A word count whose counts live in a store ``counts`` with a changelog on Kafka (string keys
    and counts), each count sent as ``word:count``: Samza's task (Samza's RocksDB store) counts and
    stops; the engine's restores the counts from the changelog Samza wrote and goes on from
    Samza's checkpoint; Samza — on a fresh store directory, so from the changelog alone — goes on
    from the counts the engine's changelog holds. (Samza's in-memory store is not used: Samza 1.8
    restores it empty after a restart, even from its own changelog; docs/decisions.md.)"""
    job = Shared(kafka_broker, kafka_topic_prefix)
    changelog = f"{kafka_topic_prefix}-counts-changelog"
    stores = {
        "stores.counts.key.serde": "string",
        "stores.counts.msg.serde": "string",
        "stores.counts.changelog": f"kafka.{changelog}",
    }
    java = {
        **stores,
        "stores.counts.factory": "org.apache.samza.storage.kv.RocksDbKeyValueStorageEngineFactory",
        "stores.counts.changelog.replication.factor": "1",
        "app.count.store": "counts",
    }
    python = job.config.with_overrides(
        {**stores, "stores.counts.factory": "inmemory", "task.class": "tests.samza_interop.tasks:CountingCopyTask"}
    )

    job.produce("a", "b", "a", "stop1")
    job.run_java(samza_job, "stop1", **java, **{"job.logged.store.base.dir": str(tmp_path / "state-1")})
    assert job.output_values() == ["a:1", "b:1", "a:2"]

    job.produce("a", "b")
    result = run_job(python)
    assert result.succeeded, result.summary_line()
    assert job.output_values() == ["a:1", "b:1", "a:2", "a:3", "b:2"]  # Samza's counts restored
    assert job.checkpointed() == "5"

    job.produce("a", "b", "c", "stop2")
    job.run_java(samza_job, "stop2", **java, **{"job.logged.store.base.dir": str(tmp_path / "state-2")})
    assert job.output_values() == ["a:1", "b:1", "a:2", "a:3", "b:2", "a:4", "b:3", "c:1"]  # the engine's restored
