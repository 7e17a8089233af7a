"""Resources against real systems: the Kafka admin resource on Apache Kafka (create,
batched offsets of every partition, description; an unreachable broker fails fast naming its
address), the systems resource's config fragment, and the coordinator-stream resource on the log."""

from __future__ import annotations

import socket

import pytest

from samza_dagster.config import Config
from samza_dagster.orchestration import CoordinatorStreamResource, KafkaAdminResource, SamzaSystemsResource
from samza_dagster.system import SystemUnavailableError


@pytest.mark.kafka
def test_kafka_admin_resource_creates_and_describes_streams(kafka_broker, kafka_topic_prefix):
    from kafka import KafkaProducer

    resource = KafkaAdminResource(bootstrap_servers=kafka_broker.bootstrap_servers)
    a, b = f"{kafka_topic_prefix}-a", f"{kafka_topic_prefix}-b"
    assert resource.create_stream(a, 3) is True
    assert resource.create_stream(a, 3) is False  # exists with that count
    assert resource.create_stream(b, 1) is True
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, linger_ms=20)
    for i in range(3):
        producer.send(a, b"x%d" % i, partition=2)
    producer.flush(timeout=30)  # one batch of three records
    producer.close()
    newest = resource.newest_offsets([a, b])
    assert newest == {a: {0: None, 1: None, 2: "2"}, b: {0: None}}
    assert resource.upcoming_offsets([a])[a] == {0: "0", 1: "0", 2: "3"}
    described = resource.describe_streams([a])[a]
    assert described["partitions"] == 3 and described["messages"] == 3
    assert described["offsets"][2] == {"oldest": "0", "newest": "2", "upcoming": "3"}


def test_kafka_admin_resource_fails_naming_an_unreachable_broker():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    resource = KafkaAdminResource(bootstrap_servers=f"127.0.0.1:{port}", bootstrap_timeout_ms=1000)
    with pytest.raises(SystemUnavailableError, match=f"127.0.0.1:{port}"):
        resource.newest_offsets(["anything"])


def test_systems_resource_owns_the_system_locations(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "from-env"))
    base = Config({"job.name": "j", "systems.log.log.path": "/elsewhere", "systems.log.samza.msg.serde": "string"})
    applied = SamzaSystemsResource().apply(base)
    assert applied["systems.log.log.path"] == str(tmp_path / "from-env")  # the deployment wins
    assert applied["systems.log.samza.msg.serde"] == "string"  # the application's keys stay
    assert "systems.kafka.samza.factory" not in applied
    explicit = SamzaSystemsResource(log_path=str(tmp_path / "x"), kafka_bootstrap_servers="h:9092").apply(base)
    assert explicit["systems.log.log.path"] == str(tmp_path / "x")
    assert explicit["systems.kafka.consumer.bootstrap.servers"] == "h:9092"
    assert explicit["systems.kafka.samza.factory"] == "kafka"


def test_coordinator_stream_resource_writes_and_reads_from_a_cursor(tmp_path):
    resource = CoordinatorStreamResource(systems=SamzaSystemsResource(log_path=str(tmp_path / "log")))
    config = Config({"job.name": "cfg-job"})
    resource.set_config(config, "task.window.ms", "100")
    resource.set_config(config, "task.window.ms", "200")
    messages, cursor = resource.read(config)
    assert [(o, m.key, m.config_value) for o, m in messages] == [
        ("0", "task.window.ms", "100"),
        ("1", "task.window.ms", "200"),
    ]
    assert cursor == "2"
    resource.set_config(config, "task.commit.ms", "5")
    later, cursor = resource.read(config, cursor)
    assert [(o, m.key) for o, m in later] == [("2", "task.commit.ms")] and cursor == "3"
    assert resource.read_state(config).config == {"task.window.ms": "200", "task.commit.ms": "5"}


@pytest.mark.parametrize(
    "resource",
    ["SamzaSystemsResource", "SparkResource", "KafkaAdminResource", "IcebergIOManager"],
)
def test_every_setting_of_a_resource_says_what_it_is_in_the_launchpad(resource):
    """The launchpad and ``dg`` show a field's description as its help: none may be blank."""
    import samza_dagster.orchestration as orchestration

    fields = getattr(orchestration, resource).to_config_schema().as_field().config_type.fields
    assert fields
    blank = [name for name, field in fields.items() if not (field.description or "").strip()]
    assert not blank, f"{resource}: settings without a description: {blank}"
