"""A stream's own settings reach its topic: ``streams.<id>.*`` (Samza's stream properties) become
the topic's configs, and ``streams.<id>.replication.factor`` its replication factor, when ``run``
creates the streams a job writes (against Apache Kafka; one broker, so a factor of 2 is refused
by the broker itself — the proof that it was asked for)."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from samza_dagster.config import ConfigError
from samza_dagster.runtime.provision import provision_streams
from tests.apps.harness import create_stream

pytestmark = pytest.mark.kafka


def _job(kafka_config, prefix: str, **streams: str):
    return kafka_config.with_overrides(
        {
            "job.name": "props",
            "job.default.system": "kafka",
            "task.class": "tests.apps.tasks:CopyTask",
            "task.inputs": f"kafka.{prefix}-in",
            "streams.out.samza.system": "kafka",
            "streams.out.samza.physical.name": f"{prefix}-out",
            "streams.out.partitions": "2",
            **{f"streams.out.{k}": v for k, v in streams.items()},
        }
    )


def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        found = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        (entries,) = [configs for by_name in found.values() for name, configs in by_name.items() if name == topic]
        return {key: data["value"] if isinstance(data, dict) else data for key, data in entries.items()}
    finally:
        admin.close()


def test_a_streams_properties_become_its_topics_configs_and_replication_factor(
    kafka_broker, kafka_config, kafka_topic_prefix
):
    config = _job(kafka_config, kafka_topic_prefix, **{"retention.ms": "3600000", "replication.factor": "1"})
    create_stream(config, "kafka", f"{kafka_topic_prefix}-in", 1)
    created = provision_streams(config)
    assert [s.physical_name for s in created.created] == [f"{kafka_topic_prefix}-out"]
    assert _topic_config(kafka_broker.bootstrap_servers, f"{kafka_topic_prefix}-out")["retention.ms"] == "3600000"

    too_many = _job(kafka_config, f"{kafka_topic_prefix}-2", **{"replication.factor": "2"})
    create_stream(too_many, "kafka", f"{kafka_topic_prefix}-2-in", 1)
    with pytest.raises(Exception, match="(?i)replication"):
        provision_streams(too_many)

    bad = _job(kafka_config, f"{kafka_topic_prefix}-3", **{"replication.factor": "three"})
    create_stream(bad, "kafka", f"{kafka_topic_prefix}-3-in", 1)
    with pytest.raises(ConfigError, match="streams.out.replication.factor"):
        provision_streams(bad)
