"""Issue 12.3 — broker trouble: the Kafka broker (Apache Kafka, support/kafka_broker.py) is frozen
with SIGSTOP for longer than every client request timeout in the middle of a job, then
resumed. The job waits and retries, logs what it waits for, and finishes: every input offset
processed exactly once in the container's (uncrashed) run, the final checkpoint at the end of
every partition, every input in the output at least once."""

from __future__ import annotations

import logging
import threading
import time

from samza_dagster.config import Config
from samza_dagster.container import SamzaContainer
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.system.factories import system_factory
from samza_dagster.task.api import InitableTask, StreamTask
from tests.apps.harness import FnTaskFactory, create_stream, job_model, produce, read_checkpoints

N = 600
PARTITIONS = 2
PAUSE_S = 6.0


class EchoTask(StreamTask, InitableTask):
    def __init__(self, out: SystemStream) -> None:
        self.out = out
        self.seen: list[tuple[int, str]] = []

    def init(self, context):
        pass

    def process(self, envelope, collector, coordinator):
        self.seen.append((envelope.ssp.partition, envelope.offset))
        collector.send(OutgoingMessageEnvelope(self.out, envelope.message, key=envelope.key))
        time.sleep(0.004)  # the job takes ~2.5 s, so the pause lands mid-job


def _missing_from(config: Config, topic: str, expected: set[bytes], timeout_s: float = 20.0) -> set[bytes]:
    """Read ``topic`` partition 0 from offset 0 until every expected message was seen (or the
    timeout): no reliance on the broker's reported newest offset."""
    consumer = system_factory(config, "kafka").get_consumer("kafka", config)
    ssp = SystemStreamPartition("kafka", topic, 0)
    consumer.register(ssp, "0")
    consumer.start()
    missing = set(expected)
    deadline = time.monotonic() + timeout_s
    try:
        while missing and time.monotonic() < deadline:
            for env in consumer.poll([ssp], 0.2).get(ssp, []):
                missing.discard(env.message)
    finally:
        consumer.stop()
    return missing


def test_broker_frozen_longer_than_request_timeouts_mid_job(kafka_broker, kafka_config, kafka_topic_prefix, caplog):
    src, dst = f"{kafka_topic_prefix}-in", f"{kafka_topic_prefix}-out"
    config: Config = kafka_config.with_overrides(
        {
            "job.name": kafka_topic_prefix,
            "job.default.system": "kafka",
            "task.inputs": f"kafka.{src}",
            "task.commit.ms": "200",
            # short client timeouts: the pause outlasts every one of them
            "systems.kafka.consumer.request.timeout.ms": "2000",
            "systems.kafka.producer.request.timeout.ms": "2000",
            "systems.kafka.admin.request.timeout.ms": "2000",
        }
    )
    create_stream(config, "kafka", src, PARTITIONS)
    create_stream(config, "kafka", dst, 1)
    produce(config, "kafka", src, [(i % PARTITIONS, b"k%d" % i, b"m%d" % i) for i in range(N)])

    factory = FnTaskFactory(lambda name: EchoTask(SystemStream("kafka", dst)))
    container = SamzaContainer("0", job_model(config), task_factory=factory)
    box: dict = {}

    def run() -> None:
        try:
            box["summary"] = container.run()
        except BaseException as exc:  # noqa: BLE001 - asserted below
            box["error"] = exc

    caplog.set_level(logging.INFO)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    processed = lambda: sum(len(t.seen) for t in factory.tasks.values())  # noqa: E731
    deadline = time.monotonic() + 60
    while processed() < N // 4 and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.01)
    assert thread.is_alive(), box
    kafka_broker.pause()
    try:
        time.sleep(PAUSE_S)
        during = processed()
    finally:
        kafka_broker.resume()
    assert thread.is_alive(), f"the job gave up while the broker was frozen: {box.get('error')!r}"
    deadline = time.monotonic() + 90
    while processed() < N and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.05)
    container.stop()  # a graceful stop commits after the last message
    thread.join(60)
    assert "error" not in box, box["error"]
    assert during < N

    seen = [s for t in factory.tasks.values() for s in t.seen]
    assert len(seen) == N and len(set(seen)) == N, "an offset was lost or processed twice"
    cps = read_checkpoints(config)
    for p in range(PARTITIONS):
        offsets = [cp.offsets.get(("kafka", src, p)) for cp in cps.values() if ("kafka", src, p) in cp.offsets]
        assert offsets == [str(N // PARTITIONS - 1)], (p, offsets)
    missing = _missing_from(config, dst, {b"m%d" % i for i in range(N)})
    assert not missing, sorted(missing)[:10]
    waits = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "kafka" in r.name.lower()]
    assert waits, "nothing logged while waiting for the broker"
