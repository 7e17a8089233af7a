"""The consumer-lag metrics of a job on Kafka (both clients, the real Kafka protocol against the
test broker): Samza's KafkaSystemConsumerMetrics group, per partition high watermark and messages
behind it, in the snapshots the job writes (to the embedded log here: the metrics stream may be
on any system)."""

from __future__ import annotations

from samza_dagster.config import Config
from samza_dagster.metrics import KAFKA_CONSUMER_GROUP, latest_snapshots
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.system.factories import system_factory
from tests.apps.harness import create_stream
from tests.metrics_apps import GROUP

PARTITIONS = 2
PER_PARTITION = 30


def test_kafka_consumer_lag_metrics_in_the_snapshots(kafka_config, kafka_topic_prefix):
    topic = f"{kafka_topic_prefix}-in"
    config: Config = kafka_config.with_overrides(
        {
            "job.name": kafka_topic_prefix,
            "job.factory.class": "thread",
            "job.default.system": "kafka",
            "task.class": "tests.metrics_apps:CountingTask",
            "task.inputs": f"kafka.{topic}",
            f"systems.kafka.streams.{topic}.samza.bounded": "true",
            "task.commit.ms": "200",
            "metrics.reporters": "snapshot",
            "metrics.reporter.snapshot.class": "snapshot",
            "metrics.reporter.snapshot.stream": "log.metrics",
        }
    )
    create_stream(config, "kafka", topic, PARTITIONS)
    producer = system_factory(config, "kafka").get_producer("kafka", config)
    producer.register("t")
    producer.start()
    for i in range(PARTITIONS * PER_PARTITION):
        producer.send(
            "t", OutgoingMessageEnvelope(SystemStream("kafka", topic), b"m%d" % i, key=b"k", partition=i % PARTITIONS)
        )
    producer.flush("t")
    producer.stop()

    result = run_job(config)
    assert result.succeeded, result.summary_line()
    (container,) = [
        s
        for s in latest_snapshots(config, SystemStream("log", "metrics")).snapshots()
        if s.header.source == "samza-container-0"
    ]
    lag = container.metrics[KAFKA_CONSUMER_GROUP]
    for p in range(PARTITIONS):
        assert lag[f"kafka-{topic}-{p}-high-watermark"] == PER_PARTITION
        assert lag[f"kafka-{topic}-{p}-messages-behind-high-watermark"] == 0
    assert lag["messages-behind-high-watermark"] == 0
    tasks = [
        s
        for s in latest_snapshots(config, SystemStream("log", "metrics")).snapshots()
        if s.header.source.startswith("TaskName-")
    ]
    assert sum(t.value(GROUP, "user-messages") for t in tasks) == PARTITIONS * PER_PARTITION
