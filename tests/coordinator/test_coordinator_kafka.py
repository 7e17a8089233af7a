"""The coordinator stream on Kafka (Apache Kafka, support/kafka_broker.py): submit, rebuild on a change written by a
plain Kafka client in Samza's byte format, served over HTTP."""

from __future__ import annotations

import json
import time

import pytest

from samza_dagster.config import Config
from samza_dagster.coordinator import JobCoordinator, coordinator_stream_name
from samza_dagster.coordinator.client import fetch_job_model, poll_version
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.system import StreamSpec, system_factory

pytestmark = pytest.mark.kafka


def _wait_for_version(url: str, version: int, timeout_s: float = 10.0) -> JobModel:
    deadline = time.monotonic() + timeout_s
    while poll_version(url) < version:
        assert time.monotonic() < deadline, f"JobModel version {version} not served within {timeout_s} s"
        time.sleep(0.05)
    return fetch_job_model(url)


def test_coordinator_on_kafka_picks_up_samza_format_bytes_from_a_raw_producer(
    kafka_config: Config, kafka_topic_prefix: str, kafka_broker
) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    job_name = kafka_topic_prefix.replace("-", "_")[-40:]  # the unique tail: one job per client run
    orders = f"{kafka_topic_prefix}-orders"
    config = kafka_config.with_overrides(
        {
            "job.name": job_name,
            "job.coordinator.system": "kafka",
            "task.inputs": f"kafka.{orders}",
            "stores.counts.factory": "inmemory",
            "stores.counts.changelog": f"kafka.{kafka_topic_prefix}-counts",
            "job.coordinator.monitor.interval.ms": "100",
        }
    )
    system_factory(config, "kafka").get_admin("kafka", config).create_stream(StreamSpec(orders, orders, "kafka", 4))
    topic = coordinator_stream_name(job_name, "1")

    with JobCoordinator(config) as coordinator:
        model = fetch_job_model(coordinator.url)
        assert model.version == 1 and list(model.containers) == ["0"]
        assert sorted(model.all_tasks()) == [f"Partition {i}" for i in range(4)]
        changelog = {n: t.changelog_partition for n, t in model.all_tasks().items()}

        # A Java Samza tool's bytes: string version, written by a plain Kafka client.
        producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
        try:
            producer.send(
                topic,
                key=b'["1","set-config","job.container.count"]',
                value=b'{"host":"am-host","username":"yarn","source":"SamzaJavaTool",'
                b'"timestamp":1500000000000,"values":{"value":"2"}}',
                partition=0,
            ).get(timeout=10)
        finally:
            producer.close()
        changed = _wait_for_version(coordinator.url, 2)
        assert sorted(changed.containers) == ["0", "1"]
        assert {n: t.changelog_partition for n, t in changed.all_tasks().items()} == changelog

        run_coordinator_stream_writer(config, "set-config", "job.container.count", "4")
        assert len(_wait_for_version(coordinator.url, 3).containers) == 4

    # What we wrote is readable by any Kafka client, in Samza's format.
    consumer = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        from kafka import TopicPartition

        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        records = []
        deadline = time.monotonic() + 10
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, "could not read the coordinator topic back"
            records.extend(r for batch in consumer.poll(timeout_ms=500).values() for r in batch)
    finally:
        consumer.close()
    keys = [json.loads(r.key) for r in records]
    assert [1, "set-config", "task.inputs"] in keys
    assert [1, "set-changelog", "Partition 3"] in keys
    value = json.loads(next(r.value for r in records if json.loads(r.key) == [1, "set-changelog", "Partition 3"]))
    assert list(value) == ["host", "username", "source", "timestamp", "values"]
    assert value["values"] == {"Partition": "3"}
