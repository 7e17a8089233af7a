"""Costs that must stay linear in the number of partitions: calls counted, not timed.

A container over a bounded log stream of P partitions (group-by-partition: P tasks) runs to the
end with counters on the calls that used to multiply — partition bounds read from the stream
files (the lag at shutdown once read every partition's bounds per partition), the run loop's
per-task housekeeping (it once looked at every task whenever one partition ended), checkpoint
writes (once one flush per task) — and the log producer's last-offset lookups (once one per
partition per batch). Each count at 64 partitions must be within a constant times 64, and grow
no faster than P between 8 and 64 partitions: a count that becomes per-partition-squared fails.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from samza_dagster.checkpoint.manager import CheckpointManager
from samza_dagster.config import Config
from samza_dagster.container import SamzaContainer
from samza_dagster.container.run_loop import RunLoop
from samza_dagster.container.summary import ContainerStatus
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.consumers import SystemConsumers
from samza_dagster.system.log import LogSystemFactory
from samza_dagster.system.log.formats import CURRENT
from support.waiting import wait_until

MESSAGES_PER_PARTITION = 5


def _config(root: Path, partitions: int) -> Config:
    return Config(
        {
            "job.name": f"scale-{partitions}",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(root),
            "systems.log.log.synchronous": "OFF",
            "task.inputs": "log.input",
            "systems.log.streams.input.samza.bounded": "true",
            "task.class": "tests.apps.tasks:NoOpTask",
            "task.commit.ms": "600000",  # the commits counted are the end-of-stream ones
        }
    )


def _produce(config: Config, partitions: int) -> None:
    factory = LogSystemFactory()
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec("input", "input", "log", partitions))
    admin.stop()
    producer = factory.get_producer("log", config)
    producer.register("t")
    ss = SystemStream("log", "input")
    for i in range(partitions * MESSAGES_PER_PARTITION):
        producer.send("t", OutgoingMessageEnvelope(ss, b"m%d" % i, partition=i % partitions))
    producer.stop()


@pytest.fixture
def counted(monkeypatch):
    """Counters on the calls that could multiply, on the real classes."""
    counts: Counter[str] = Counter()

    def spy(cls, name: str, count=lambda *a, **k: 1):
        original = getattr(cls, name)

        def wrapper(*args, **kwargs):
            counts[name] += count(*args, **kwargs)
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    # every partition bound read from a new stream file (the current format's) passes through here
    spy(type(CURRENT), "bounds_of", count=lambda self, conn, partitions: len(partitions))
    spy(RunLoop, "_run_due")
    spy(CheckpointManager, "write_all")
    spy(type(CURRENT), "next_offsets", count=lambda self, conn, partitions: len(partitions))
    spy(
        SystemConsumers,
        "_poll_inline",
        count=lambda self, *a, **k: (
            sum(len(s) for _, s in self._inline.values())
            if not k.get("topping_up")
            else sum(len(r) for r in self._refill.values())
        ),
    )
    return counts


def _run(tmp_path: Path, partitions: int, counts: Counter) -> Counter:
    config = _config(tmp_path / str(partitions), partitions)
    _produce(config, partitions)
    counts.clear()
    summary = SamzaContainer("0", build_job_model(config).model).run()
    assert summary.status is ContainerStatus.COMPLETED
    assert summary.messages_processed == partitions * MESSAGES_PER_PARTITION
    assert len(summary.metrics["lag"]) == partitions and not any(summary.metrics["lag"].values())
    return Counter(counts)


def test_start_commit_and_stop_cost_stays_linear_in_partitions(tmp_path, counted):
    small, large = _run(tmp_path, 8, counted), _run(tmp_path, 64, counted)
    # partition bounds: start-up (input metadata, bounded ends) and the lag at shutdown (the
    # summary's, and the consumer-lag metric's final snapshot: two lookups of every partition)
    # read each partition a few times; reading all of them per partition would be 64 * 64
    assert 64 <= large["bounds_of"] <= 6 * 64, large
    assert large["bounds_of"] <= 8 * small["bounds_of"] + 16, (small, large)
    # the run loop looks at a task when it asks or ends (plus every task at a timer), not at
    # every task whenever one ends
    assert large["_run_due"] <= 2 * 64, large
    # the 64 end-of-stream commits are written together, not one checkpoint flush per task
    assert large["write_all"] <= 4, large
    # the top-up polls ask for partitions that need data, not every partition every millisecond
    assert large["_poll_inline"] <= 8 * small["_poll_inline"] + 64 * 4, (small, large)


def test_the_producer_asks_each_partition_for_its_last_offset_once(tmp_path, counted):
    partitions = 64
    config = Config({"systems.log.log.path": str(tmp_path), "systems.log.log.batch.size": "32"})
    _produce(config, partitions)  # 320 messages in 10 batches, each over half the partitions
    assert counted["next_offsets"] == partitions  # once per partition, not once per batch


def test_offsets_stay_dense_when_two_producers_take_turns(tmp_path):
    """Each producer keeps its partitions' next offsets; when the other wrote meanwhile
    (SQLite's data_version changed) it reads them again, so no offset is given twice."""
    config = Config({"systems.log.log.path": str(tmp_path)})
    factory = LogSystemFactory()
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec("s", "s", "log", 2))
    ss = SystemStream("log", "s")
    a, b = factory.get_producer("log", config), factory.get_producer("log", config)
    for producer in (a, b):
        producer.register("t")
    for i in range(6):
        for name, producer in (("a", a), ("b", b)):
            producer.send("t", OutgoingMessageEnvelope(ss, f"{name}{i}".encode(), partition=i % 2))
            producer.flush("t")
    a.stop()
    b.stop()
    consumer = factory.get_consumer("log", config)
    got: dict[int, list[tuple[int, bytes]]] = {}
    for p in (0, 1):
        ssp = SystemStreamPartition("log", "s", p)
        consumer.register(ssp, "0")
    consumer.start()
    for ssp, envelopes in consumer.poll([SystemStreamPartition("log", "s", p) for p in (0, 1)], 0).items():
        got[ssp.partition] = [(int(e.offset), e.message) for e in envelopes]
    consumer.stop()
    admin.stop()
    assert got[0] == list(enumerate([b"a0", b"b0", b"a2", b"b2", b"a4", b"b4"]))
    assert got[1] == list(enumerate([b"a1", b"b1", b"a3", b"b3", b"a5", b"b5"]))


def test_the_producer_continues_after_a_partition_its_cleaner_emptied(tmp_path):
    """The cleaner (its own connection) empties the partition and records its floor; the
    producer's next batch sees the file changed, reads the partition's next offset again and
    continues at the floor, never at 0."""
    config = Config({"systems.log.log.path": str(tmp_path), "systems.log.log.cleaner.interval.ms": "0"})
    factory = LogSystemFactory()
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec("s", "s", "log", 1, {"retention.ms": "1"}))
    producer = factory.get_producer("log", config)
    producer.register("t")
    ss = SystemStream("log", "s")
    for _ in range(3):
        producer.send("t", OutgoingMessageEnvelope(ss, b"old", partition=0, event_time=1))
    producer.flush("t")
    wait_until(
        lambda: admin.get_system_stream_metadata(["s"])["s"].partitions[0].newest_offset is None,
        timeout_s=10,
        what="the cleaner emptying the partition",
    )
    # stamped an hour ahead, so the retention of 1 ms (the cleaner runs continuously) keeps it
    producer.send("t", OutgoingMessageEnvelope(ss, b"new", partition=0, event_time=int(time.time() * 1000) + 3_600_000))
    producer.flush("t")
    producer.stop()
    md = admin.get_system_stream_metadata(["s"])["s"].partitions[0]
    admin.stop()
    assert (md.newest_offset, md.upcoming_offset) == ("3", "4")
