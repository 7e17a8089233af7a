"""Startpoints on a real job (bounded input, CopyTask into an output stream), on the embedded log
(thread, process and Spark runners) and on Kafka (Apache Kafka, both clients; thread
runner): each of the four kinds is applied once ahead of the checkpoint, the first commit removes
it so a restart resumes from the checkpoint, and a crash before that commit applies it again.
On Kafka also: bad startpoints are refused naming the value, with nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.stream_helpers import read_stream
from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.runtime import run_job
from samza_dagster.runtime.startpoints import set_startpoints
from samza_dagster.startpoint.manager import StartpointManager
from samza_dagster.startpoint.startpoint import (
    StartpointError,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from samza_dagster.system.factories import system_factory
from samza_dagster.task import StreamTask
from tests.apps.harness import read_checkpoints

#: 2100-01-01: after every record's timestamp
AFTER_ALL = 4_102_444_800_000


class CrashingTask(StreamTask):
    """Fails on its first message: the container dies before any commit."""

    def process(self, envelope, collector, coordinator):
        raise RuntimeError(f"crash at offset {envelope.offset}")


def produce_timed(config: Config, system: str, stream: str, values: list[tuple[str, int]]) -> None:
    """``values`` as (message, event time in ms) into partition 0, batched, flushed once."""
    producer = system_factory(config, system).get_producer(system, config)
    producer.register("test")
    producer.start()
    try:
        for value, ts in values:
            producer.send(
                "test",
                OutgoingMessageEnvelope(SystemStream(system, stream), value.encode(), partition=0, event_time=ts),
            )
        producer.flush("test")
    finally:
        producer.stop()


class Scenario:
    def __init__(self, config: Config, system: str, prefix: str, runner: str = "thread") -> None:
        self.system = system
        self.input = f"{prefix}in"
        self.output = f"{prefix}out"
        self.ssp = SystemStreamPartition(system, self.input, 0)
        self.config = config.with_overrides(
            {
                "job.factory.class": runner,
                "job.default.system": system,
                "job.coordinator.system": system,
                "task.inputs": f"{system}.{self.input}",
                "task.class": "tests.apps.tasks:CopyTask",
                "task.commit.ms": "100000",  # only the final commit of a run: a crash commits nothing
                "test.output.system": system,
                "test.output.stream": self.output,
                f"systems.{system}.samza.msg.serde": "string",
                f"systems.{system}.streams.{self.input}.samza.bounded": "true",
            }
        )
        admin = system_factory(self.config, system).get_admin(system, self.config)
        for stream in (self.input, self.output):
            admin.create_stream(StreamSpec(stream, stream, system, 1))
        self.seen = 0

    def run(self, **overrides: str) -> list[str]:
        """Run the job to its end; the values it copied in this run."""
        result = run_job(self.config.with_overrides(overrides))
        assert result.succeeded, result.summary_line()
        return self.new_output()

    def new_output(self) -> list[str]:
        values = [r.value.decode() for r in read_stream(self.config, self.output, system=self.system)]
        new, self.seen = values[self.seen :], len(values)
        return new

    def checkpoint(self) -> str:
        return read_checkpoints(self.config)["Partition 0"].offsets[self.ssp]

    def set(self, startpoint) -> None:
        with StartpointManager(self.config) as manager:
            manager.write_startpoint(self.ssp, startpoint)

    def remaining(self) -> dict:
        with StartpointManager(self.config) as manager:
            return manager.read_all()


def _m(*indexes: int) -> list[str]:
    return [f"m{i}" for i in indexes]


def run_scenario(s: Scenario) -> None:
    produce_timed(s.config, s.system, s.input, [(f"m{i}", 1_000_000 + 1000 * i) for i in range(10)])
    assert s.run() == _m(*range(10))
    assert s.checkpoint() == "9"

    # specific: applied once ahead of the checkpoint, then removed
    s.set(StartpointSpecific("4"))
    assert s.run() == _m(*range(4, 10))
    assert s.remaining() == {}
    assert s.run() == []  # restart after the commit resumes from the checkpoint
    assert s.checkpoint() == "9"

    # timestamp, with a crash before the first commit: applied again by the next start. Between
    # m6 and m7 the earliest at or after is m7 (on Kafka: the broker's offsets-for-times lookup)
    s.set(StartpointTimestamp(1_000_000 + 6500))
    result = run_job(s.config.with_overrides({"task.class": "tests.startpoint.test_startpoints:CrashingTask"}))
    assert not result.succeeded
    assert s.new_output() == []
    assert [k.task_name for k in s.remaining()] == ["Partition 0"]  # fanned out, still there
    assert s.run() == _m(7, 8, 9)
    assert s.remaining() == {}
    assert s.run() == []

    # oldest
    s.set(StartpointOldest())
    assert s.run() == _m(*range(10))
    assert s.remaining() == {}

    # upcoming: what was written while the job was down is skipped, and the commit moves the
    # checkpoint past it although nothing was read
    produce_timed(s.config, s.system, s.input, [("m10", 1_100_000), ("m11", 1_100_001)])
    s.set(StartpointUpcoming())
    assert s.run() == []
    assert s.remaining() == {}
    assert s.checkpoint() == "11"
    produce_timed(s.config, s.system, s.input, [("m12", 1_100_002)])
    assert s.run() == _m(12)


@pytest.mark.parametrize("runner", ["thread", "process", pytest.param("spark", marks=pytest.mark.spark)])
def test_startpoints_on_the_embedded_log(tmp_path: Path, runner: str):
    config = Config(
        {
            "job.name": "startpoints",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
        }
    )
    try:
        run_scenario(Scenario(config, "log", "", runner))
    finally:
        if runner == "spark":
            # the runner's session (local[1]: one container) is left active by the runner; a later
            # test asking for local[2] would get it back and fail on too few slots
            from pyspark.sql import SparkSession

            session = SparkSession.getActiveSession()
            if session is not None:
                session.stop()


@pytest.mark.kafka
def test_startpoints_on_kafka(kafka_config: Config, kafka_topic_prefix: str):
    config = kafka_config.with_overrides({"job.name": kafka_topic_prefix.replace("-", "_")[-40:]})
    run_scenario(Scenario(config, "kafka", f"{kafka_topic_prefix}-"))


@pytest.mark.kafka
def test_bad_startpoints_on_kafka_are_refused_and_write_nothing(kafka_config: Config, kafka_topic_prefix: str):
    config = kafka_config.with_overrides({"job.name": kafka_topic_prefix.replace("-", "_")[-40:]})
    s = Scenario(config, "kafka", f"{kafka_topic_prefix}-")
    produce_timed(s.config, "kafka", s.input, [(f"m{i}", 1_000_000 + 1000 * i) for i in range(3)])
    admin = system_factory(s.config, "kafka").get_admin("kafka", s.config)
    try:
        assert admin.offsets_for_times({s.ssp: 1_000_000}) == {s.ssp: "0"}
        assert admin.offsets_for_times({s.ssp: 1_000_001}) == {s.ssp: "1"}  # the first record at or after
        assert admin.offsets_for_times({s.ssp: 1_002_000}) == {s.ssp: "2"}
        assert admin.offsets_for_times({s.ssp: AFTER_ALL}) == {s.ssp: None}
        with pytest.raises(ValueError, match=f"stream '{s.input}' has no partition 3"):
            admin.offsets_for_times({SystemStreamPartition("kafka", s.input, 3): 0})
    finally:
        admin.close()
    bad = [
        (StartpointTimestamp(AFTER_ALL), None, "no message at or after that time"),
        (StartpointSpecific("4"), None, r"offset 4 is not in .* \(it holds 0\.\.3, 3 being the next to be written\)"),
        (StartpointOldest(), [2], f"kafka.{s.input} has no partition 2"),
    ]
    set_startpoints(s.config, f"kafka.{s.input}", StartpointSpecific("3"))  # upcoming itself is allowed
    before = s.remaining()
    for startpoint, partitions, named in bad:
        with pytest.raises(StartpointError, match=named):
            set_startpoints(s.config, f"kafka.{s.input}", startpoint, partitions)
    with pytest.raises(StartpointError, match=f"stream 'kafka.{s.output}' is not an input"):
        set_startpoints(s.config, f"kafka.{s.output}", StartpointOldest())
    assert s.remaining() == before
