"""Batch tasks (``process_batch``), on the embedded log: each batch is a run of one partition in
offset order, nothing is lost or repeated, a commit covers whole batches only, a failing batch
names its coordinates and stays out of the checkpoint, bad messages and control messages split
nothing they should not, and the settings that would schedule a batch task elsewhere are refused."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container import ContainerStatus, SamzaContainer, TaskProcessError
from samza_dagster.container.task_instance import TaskInstance
from samza_dagster.control import EndOfStreamMessage, IntermediateMessageSerde, WatermarkMessage
from samza_dagster.control.handler import ControlMessageHandler, IntermediateStreamDecoder
from samza_dagster.model import IncomingMessageEnvelope, OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.runtime.preflight import check_job_values
from samza_dagster.serde import JsonSerde
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.task import DEFAULT_BATCH_TASK_RUN, BatchStreamTask
from samza_dagster.task.coordinator import ContainerRequests
from support.log_reading import read_partition
from tests.apps.harness import FnTaskFactory, create_stream, job_model, produce, read_checkpoints

OUT = SystemStream("log", "out")


def _config(log_config: Config, **extra: str) -> Config:
    return log_config.with_overrides(
        {
            "job.default.system": "log",
            "task.inputs": "log.input",
            "systems.log.streams.input.samza.bounded": "true",
            "systems.log.samza.msg.serde": "json",
            **extra,
        }
    )


def _fill(config: Config, partitions: int, per_partition: int) -> None:
    create_stream(config, "log", "input", partitions)
    create_stream(config, "log", "out", 1)
    produce(
        config,
        "log",
        "input",
        [(p, None, json.dumps({"p": p, "i": i}).encode()) for i in range(per_partition) for p in range(partitions)],
    )


class Batch(NamedTuple):
    """One ``process_batch`` call as the task saw it."""

    partition: int
    offsets: list[int]


class RecordingBatchTask(BatchStreamTask):
    """Records every :class:`Batch` and forwards each message to ``log.out``;
    asks for a commit after its second batch and fails on the batch holding ``fail_at``."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.batches: list[Batch] = []
        self.fail_at = fail_at

    def process_batch(self, envelopes, collector, coordinator) -> None:
        offsets = [int(e.offset) for e in envelopes]
        if self.fail_at is not None and self.fail_at in offsets:
            raise ValueError("bad batch")
        self.batches.append(Batch(envelopes[0].ssp.partition, offsets))
        for e in envelopes:
            collector.send(OutgoingMessageEnvelope(OUT, e.message))
        if len(self.batches) == 2:
            coordinator.commit("task")


def _run(config: Config, make) -> tuple[SamzaContainer, FnTaskFactory]:
    factory = FnTaskFactory(make)
    container = SamzaContainer("0", job_model(config), task_factory=factory)
    summary = container.run()
    assert summary.status is ContainerStatus.COMPLETED
    return container, factory


def test_every_batch_is_one_partitions_run_in_offset_order_and_each_message_is_processed_once(log_config):
    config = _config(log_config, **{"job.container.count": "1", "systems.log.streams.input.partitions": "2"})
    config = config.with_overrides({"job.systemstreampartition.grouper.factory": "group-by-system-stream-partition"})
    _fill(config, 2, 3000)
    config = config.with_overrides({"task.consumer.batch.size": "500"})
    _, factory = _run(config, lambda name: RecordingBatchTask())
    batches = [b for task in factory.tasks.values() for b in task.batches]
    # how many a batch holds also depends on what the poller had buffered: at most the batch size
    assert all(len(b.offsets) <= 500 for b in batches)
    per_partition: dict[int, list[int]] = {}
    for b in batches:
        assert b.offsets == list(range(b.offsets[0], b.offsets[0] + len(b.offsets)))  # contiguous, ascending
        per_partition.setdefault(b.partition, []).extend(b.offsets)
    assert per_partition == {0: list(range(3000)), 1: list(range(3000))}
    assert len(read_partition(config, "log", "out", 0, "0")) == 6000


def test_a_batch_task_without_a_batch_size_gets_batches_of_the_default_run_not_of_one(log_config):
    config = _config(log_config).without(["systems.log.samza.msg.serde"])  # raw bytes: no decoding
    _fill(config, 1, 5000)
    _, factory = _run(config, lambda name: RecordingBatchTask())
    (task,) = factory.tasks.values()
    sizes = [len(b.offsets) for b in task.batches]
    assert sum(sizes) == 5000
    # bounded by DEFAULT_BATCH_TASK_RUN and by what the partition's buffer held, which the
    # log's default fetch (250 a poll) would have capped
    assert 250 < max(sizes) <= DEFAULT_BATCH_TASK_RUN


def test_a_commit_asked_for_inside_a_batch_covers_that_whole_batch_and_a_failing_batch_stays_out(log_config):
    config = _config(log_config, **{"task.consumer.batch.size": "100"})
    _fill(config, 1, 1000)
    factory = FnTaskFactory(lambda name: RecordingBatchTask(fail_at=450))
    with pytest.raises(TaskProcessError) as info:
        SamzaContainer("0", job_model(config), task_factory=factory).run()
    text = str(info.value)
    assert "failed processing the batch of" in text and "log.input partition 0 offset" in text
    assert "ValueError: bad batch" in text
    (task,) = factory.tasks.values()
    second_batch_end = task.batches[1].offsets[-1]
    checkpoint = read_checkpoints(config)["Partition 0"].offsets[("log", "input", 0)]
    # the commit asked for during the second batch ran after it, covering the batch whole; the
    # failure commits nothing more, so none of the failing batch (which holds 450) is covered
    assert int(checkpoint) == second_batch_end < 450

    # a restart from the checkpoint processes everything after it, the failing batch included
    _, again = _run(config, lambda name: RecordingBatchTask())
    (task,) = again.tasks.values()
    redone = [o for b in task.batches for o in b.offsets]
    assert redone == list(range(int(checkpoint) + 1, 1000))


class CollectingBatchTask(BatchStreamTask):
    def __init__(self) -> None:
        self.messages: list = []
        self.batches = 0

    def process_batch(self, envelopes, collector, coordinator) -> None:
        self.batches += 1
        self.messages.extend(e.message for e in envelopes)


def test_undecodable_messages_are_left_out_of_the_batch_and_their_offsets_still_count(log_config):
    config = _config(log_config, **{"task.drop.deserialization.errors": "true", "systems.log.samza.msg.serde": "json"})
    create_stream(config, "log", "input", 1)
    produce(config, "log", "input", [(0, None, b'{"n": %d}' % i if i % 7 else b"not json") for i in range(200)])
    container, factory = _run(config, lambda name: CollectingBatchTask())
    (task,) = factory.tasks.values()
    assert task.messages == [{"n": i} for i in range(200) if i % 7]
    assert read_checkpoints(config)["Partition 0"].offsets[("log", "input", 0)] == "199"
    assert container.tasks["Partition 0"].metrics.deserialization_errors_dropped == len(range(0, 200, 7))


@pytest.mark.parametrize(("key", "value"), [("job.container.thread.pool.size", "4"), ("task.max.concurrency", "2")])
def test_settings_that_would_schedule_a_batch_task_off_the_inline_loop_are_refused_by_name(log_config, key, value):
    config = _config(log_config, **{"task.class": "tests.apps.tasks:NoOpBatchTask", key: value})
    with pytest.raises(ConfigError) as info:
        check_job_values(config)
    assert repr(key) in str(info.value) and "process_batch" in str(info.value)


def test_a_control_message_inside_a_run_splits_the_batch_and_acts_between_its_halves():
    """The real intermediate-stream decoder and control handler: the watermark acts after the
    messages before it reached the task and before those after it; the end-of-stream ends the
    partition after the last batch; every envelope's offset counts."""
    ssp = SystemStreamPartition("log", "mid", 0)
    events: list = []

    class Recording(BatchStreamTask):
        def process_batch(self, envelopes, collector, coordinator):
            events.append(("batch", [e.message[1] for e in envelopes]))

    config = Config({"job.name": "split"})
    ti = TaskInstance(
        "Partition 0",
        Recording(),
        frozenset({ssp}),
        config=config,
        container_id="0",
        producers={},
        serdes=SerdeRegistry(config),
        container_requests=ContainerRequests(),
    )
    json_serde = JsonSerde()
    ti.set_stream_decoder(ssp.system_stream, IntermediateStreamDecoder(json_serde, json_serde))
    handler = ControlMessageHandler([ssp], {ssp.system_stream: 1}, lambda s, wm: events.append(("watermark", wm)))
    ti.install_control_handling(handler, lambda s: events.append(("end", s.partition)))
    framing = IntermediateMessageSerde(json_serde)
    messages = ["a", "b", WatermarkMessage(100, "t0", 1), "c", EndOfStreamMessage("t0", 1)]
    run = [
        IncomingMessageEnvelope(ssp, str(i), json_serde.to_bytes(i), framing.to_bytes(m))
        for i, m in enumerate(messages)
    ]
    ti.process_run(run)
    assert events == [("batch", ["a", "b"]), ("watermark", 100), ("batch", ["c"]), ("end", 0)]
    assert ti.last_processed[ssp] == "4" and ti.metrics.processed[ssp] == 5 and ti.metrics.control_messages == 2
