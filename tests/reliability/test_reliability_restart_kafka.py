"""A restart after a crash inside a commit, on Apache Kafka: nothing before the containers waits
for the dead container's open transaction.

A container killed between sending its checkpoint and committing its transaction leaves that
transaction open on the checkpoint topic. A ``read_committed`` reader of that topic cannot read
past it until someone ends it: the container's next instance, whose ``InitProducerId`` fences
and aborts it at once, or the broker, after ``transaction.timeout.ms``. So whatever reads the
checkpoints before the containers start — ``run``'s progress display, a Dagster observation —
reads what is committed so far (up to the last stable offset) and never waits.

The crash is set up deterministically: a transaction opened under the container's own
transactional id, holding a checkpoint message, left open with a 10-minute timeout.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest

from samza_dagster.checkpoint.manager import checkpoint_stream_name
from samza_dagster.cli.progress import JobWatch
from samza_dagster.config import Config
from samza_dagster.container.exactly_once import transactional_id
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.orchestration.observation import checkpointed_offsets
from samza_dagster.runtime.provision import provision_streams
from samza_dagster.system.factories import system_factory
from tests import REPO
from tests.apps.harness import create_stream, produce
from tests.system.kafka.test_exactly_once_kafka import _read

pytestmark = pytest.mark.kafka

BIN = Path(sys.executable).parent / "samza-dagster"
MESSAGES = 120
#: the dead transaction outlives every wait below by far: only fencing can end it in time
DEAD_TRANSACTION_TIMEOUT_MS = 600_000


def _config(kafka_config: Config, prefix: str, tmp_path: Path) -> Config:
    return kafka_config.with_overrides(
        {
            "job.name": f"restart-{uuid.uuid4().hex[:8]}",
            "job.factory.class": "thread",
            "job.default.system": "kafka",
            "job.processing.guarantee": "exactly-once",
            "task.inputs": f"kafka.{prefix}-in",
            "task.class": "tests.apps.tasks:CopyTask",
            "task.commit.ms": "100",
            "systems.kafka.samza.msg.serde": "string",
            "systems.kafka.samza.key.serde": "string",
            f"systems.kafka.streams.{prefix}-in.samza.bounded": "true",
            "test.output.system": "kafka",
            "test.output.stream": f"{prefix}-out",
            "job.logged.store.base.dir": str(tmp_path / "state"),
        }
    )


def _leave_a_dead_transaction(config: Config) -> object:
    """Container 0 "crashed" inside a commit: its transactional id has a transaction open on the
    checkpoint topic, holding a checkpoint message that must never be read (it is not one)."""
    stream = checkpoint_stream_name(config.get_str("job.name"), "1")
    create_stream(config, "kafka", stream, 1)
    dead = config.with_overrides({"systems.kafka.producer.transaction.timeout.ms": str(DEAD_TRANSACTION_TIMEOUT_MS)})
    producer = system_factory(dead, "kafka").get_producer("kafka", dead)
    producer.register("dead")
    producer.start()
    producer.init_transactions(transactional_id(config, "0"), stream)
    envelope = OutgoingMessageEnvelope(SystemStream("kafka", stream), b"not a checkpoint", b"Partition 0", None, 0)
    producer.send("dead", envelope)
    producer.flush("dead")
    assert producer.has_open_transaction()
    return producer  # kept alive, never committed nor aborted: as a SIGKILLed process leaves it


def _within(seconds: float, fn) -> object:  # type: ignore[no-untyped-def]
    box: dict[str, object] = {}
    thread = threading.Thread(target=lambda: box.update(result=fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn} waited on the dead transaction"
    return box["result"]


def test_observers_read_the_committed_checkpoints_past_a_dead_containers_open_transaction(
    kafka_config, kafka_topic_prefix, tmp_path
):
    config = _config(kafka_config, kafka_topic_prefix, tmp_path)
    create_stream(config, "kafka", f"{kafka_topic_prefix}-in", 1)
    produce(config, "kafka", f"{kafka_topic_prefix}-in", [(0, None, f"m{i}".encode()) for i in range(MESSAGES)])
    dead = _leave_a_dead_transaction(config)
    provisioned = provision_streams(config, create=True)

    watch = _within(60, lambda: JobWatch(config, [*provisioned.created, *provisioned.existing]))
    assert watch.sample().lag == MESSAGES  # type: ignore[attr-defined]
    watch.close()  # type: ignore[attr-defined]
    # what the Dagster observation of the input reads (an empty checkpoint stream so far)
    assert _within(60, lambda: checkpointed_offsets(config)) == {}
    del dead


def test_run_restarts_after_a_crash_inside_a_commit_without_waiting_for_the_transaction_timeout(
    kafka_config, kafka_topic_prefix, tmp_path
):
    config = _config(kafka_config, kafka_topic_prefix, tmp_path)
    prefix = kafka_topic_prefix
    create_stream(config, "kafka", f"{prefix}-in", 2)
    create_stream(config, "kafka", f"{prefix}-out", 1)
    produce(config, "kafka", f"{prefix}-in", [(i % 2, None, f"m{i}".encode()) for i in range(MESSAGES)])
    dead = _leave_a_dead_transaction(config)
    props = tmp_path / "job.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in config.items()))

    # the broker would end the dead transaction only after 10 minutes: the container's fencing must
    run = subprocess.run(
        [str(BIN), "run", "--config-path", str(props)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    bootstrap = kafka_config.get_str("systems.kafka.consumer.bootstrap.servers")
    out = Counter(v.decode() for v in _read(bootstrap, f"{prefix}-out", "read_committed"))
    assert out == Counter({f"m{i}": 1 for i in range(MESSAGES)})
    del dead
