"""Control messages of intermediate streams against Apache Samza 1.8.0's own
``IntermediateMessageSerde``: what the engine writes, Samza reads with every field equal, and the
reverse; a job's whole intermediate stream is read by Samza; a stage job ends on end-of-stream
messages Samza's classes wrote (they carry no producer count: the plan gives it)."""

from __future__ import annotations

import json

import pytest

from samza_dagster.control import (
    DrainMessage,
    EndOfStreamMessage,
    IntermediateMessageSerde,
    UnsupportedControlMessageError,
    WatermarkMessage,
)
from samza_dagster.control.handler import ControlMessageHandler, IntermediateStreamDecoder
from samza_dagster.control.sender import ControlMessageSender
from samza_dagster.model import IncomingMessageEnvelope, OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.runtime.thread_runner import ThreadJobRunner
from samza_dagster.serde import JsonSerde
from samza_dagster.system.factories import system_factory
from support.hl_harness import bounded, create, produce, read_all, run, statuses
from tests.hl_apps import base
from tests.samza_interop.harness import SamzaRefused, SamzaWire, b64, unb64

SERDE = IntermediateMessageSerde()

MESSAGES = [
    EndOfStreamMessage("Partition 0"),
    EndOfStreamMessage(None),
    EndOfStreamMessage('tâche "7"'),
    WatermarkMessage(1500000000123, "Partition 3"),
    WatermarkMessage(-1, None),
    WatermarkMessage(0, "Partition 11"),
    DrainMessage("Partition 2", "run-2026-12-05"),
    DrainMessage(None, "r"),
]


def _fields(message: object) -> dict:
    """What Samza's getters give for ``message``, from the engine's object."""
    if isinstance(message, EndOfStreamMessage):
        return {"class": "EndOfStreamMessage", "taskName": message.task_name, "version": message.version}
    if isinstance(message, WatermarkMessage):
        return {
            "class": "WatermarkMessage",
            "taskName": message.task_name,
            "version": message.version,
            "timestamp": message.timestamp,
        }
    assert isinstance(message, DrainMessage)
    return {"class": "DrainMessage", "taskName": message.task_name, "version": message.version, "runId": message.run_id}


def _samza_encode(samza: SamzaWire, message: object) -> bytes:
    if isinstance(message, EndOfStreamMessage):
        request = {"kind": "end-of-stream", "taskName": message.task_name}
    elif isinstance(message, WatermarkMessage):
        request = {"kind": "watermark", "taskName": message.task_name, "timestamp": message.timestamp}
    else:
        assert isinstance(message, DrainMessage)
        request = {"kind": "drain", "taskName": message.task_name, "runId": message.run_id}
    return unb64(samza.call("intermediate.encode", **request)["bytes"])


@pytest.mark.parametrize("message", MESSAGES, ids=repr)
def test_samza_reads_every_control_message_the_engine_writes(samza: SamzaWire, message: object) -> None:
    assert samza.call("intermediate.decode", bytes=b64(SERDE.to_bytes(message))) == _fields(message)


@pytest.mark.parametrize("message", MESSAGES, ids=repr)
def test_the_engine_reads_every_control_message_samza_writes(samza: SamzaWire, message: object) -> None:
    data = _samza_encode(samza, message)
    assert _fields(SERDE.from_bytes(data)) == _fields(message)
    # and writes the same bytes back: Samza's field order, no taskCount
    assert SERDE.to_bytes(SERDE.from_bytes(data)) == data


def test_user_messages_travel_both_ways(samza: SamzaWire) -> None:
    serde = IntermediateMessageSerde(JsonSerde())
    data = serde.to_bytes({"word": "wörd", "n": 3})
    answer = samza.call("intermediate.decode", bytes=b64(data))
    assert answer["class"] == "user" and json.loads(unb64(answer["user"])) == {"word": "wörd", "n": 3}
    from_samza = unb64(samza.call("intermediate.encode", kind="user", user=b64(b'{"a":1}'))["bytes"])
    assert serde.from_bytes(from_samza) == {"a": 1}


def test_samza_refuses_the_design_documents_task_count_which_the_engine_still_reads(samza: SamzaWire) -> None:
    old = b'\x02{"taskName":"Partition 0","taskCount":2,"version":1}'
    with pytest.raises(SamzaRefused, match="taskCount"):
        samza.call("intermediate.decode", bytes=b64(old))
    assert SERDE.from_bytes(old) == EndOfStreamMessage("Partition 0", 2)


class _Recorder:
    """A system producer that keeps what it is sent (the sender's bytes, as a log would hold them)."""

    def __init__(self) -> None:
        self.sent: list[OutgoingMessageEnvelope] = []

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        self.sent.append(envelope)

    def flush(self, source: str) -> None:
        pass


def test_what_a_producer_task_sends_samza_reads_on_every_partition(samza: SamzaWire) -> None:
    recorder = _Recorder()
    sender = ControlMessageSender("Partition 4", {"log": recorder})  # type: ignore[dict-item]
    stream = SystemStream("log", "job-1-partition_by-p1")
    sender.send_watermark(stream, 3, 1700000000000)
    sender.send_end_of_stream(stream, 3)
    decoded = [(e.partition, samza.call("intermediate.decode", bytes=b64(e.message))) for e in recorder.sent]
    assert decoded == [
        (p, {"class": "WatermarkMessage", "taskName": "Partition 4", "version": 1, "timestamp": 1700000000000})
        for p in range(3)
    ] + [(p, {"class": "EndOfStreamMessage", "taskName": "Partition 4", "version": 1}) for p in range(3)]


def test_a_drain_samza_wrote_stops_the_task_naming_where_it_was(samza: SamzaWire) -> None:
    ssp = SystemStreamPartition("kafka", "job-1-partition_by-p1", 2)
    envelope = IncomingMessageEnvelope(ssp, "118", None, _samza_encode(samza, DrainMessage("Partition 0", "run-9")))
    assert IntermediateStreamDecoder(None, None).decode(envelope) is False
    handler = ControlMessageHandler([ssp], {ssp.system_stream: 1}, lambda s, w: None)
    with pytest.raises(
        UnsupportedControlMessageError, match="stream kafka.job-1-partition_by-p1, partition 2, offset 118"
    ):
        handler(envelope)


# -- whole jobs: an intermediate stream the engine wrote, one Samza wrote the control messages of ----


def _two_stage_config(tmp_path):
    return bounded(base(tmp_path, "wc", "TwoStageCountApp", **{"job.intermediate.stream.partitions": "3"}), "words")


def _raw(cfg, stream: str, partition: int) -> list[tuple[str, bytes]]:
    consumer = system_factory(cfg, "log").get_consumer("log", cfg)
    ssp = SystemStreamPartition("log", stream, partition)
    consumer.register(ssp, "0")
    consumer.start()
    out: list[tuple[str, bytes]] = []
    try:
        while envelopes := consumer.poll([ssp], 0).get(ssp, []):
            out += [(e.offset, e.message) for e in envelopes if not e.is_end_of_stream]
    finally:
        consumer.stop()
    return out


def test_samza_reads_every_message_of_an_intermediate_stream_a_job_wrote(samza: SamzaWire, tmp_path) -> None:
    cfg = _two_stage_config(tmp_path)
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    produce(cfg, "words", [(i % 4, None, f"w{i % 7}") for i in range(80)])
    up = run(cfg.with_overrides({"app.stage": "0"}))
    assert statuses(up) == {"completed"}
    stream = "wc-1-partition_by-by-word"
    users = 0
    for partition in range(3):
        ended = []
        for offset, value in _raw(cfg, stream, partition):
            try:
                answer = samza.call("intermediate.decode", bytes=b64(value))
            except SamzaRefused as exc:
                raise AssertionError(f"Samza refused {stream}[{partition}] offset {offset}: {exc}") from None
            if answer["class"] == "user":
                users += 1
            elif answer["class"] == "EndOfStreamMessage":
                assert answer["version"] == 1
                ended.append(answer["taskName"])
        assert sorted(ended) == [f"Partition {t}" for t in range(4)], (partition, ended)
    assert users == 80


def test_a_stage_job_ends_on_end_of_stream_messages_samza_wrote(samza: SamzaWire, tmp_path) -> None:
    cfg = _two_stage_config(tmp_path)
    create(cfg, "words", 4)  # the upstream stage's input: its 4 tasks are the producer count
    create(cfg, "counts", 3)
    stream = "wc-1-partition_by-by-word"
    create(cfg, stream, 3)
    producer = system_factory(cfg, "log").get_producer("log", cfg)
    producer.register("samza")
    producer.start()
    ss = SystemStream("log", stream)
    words = [f"w{i % 5}" for i in range(30)]
    user = IntermediateMessageSerde(JsonSerde())
    for w in words:
        producer.send("samza", OutgoingMessageEnvelope(ss, user.to_bytes(1), json.dumps(w).encode()))
    for task in range(4):
        eos = _samza_encode(samza, EndOfStreamMessage(f"Partition {task}"))
        for p in range(3):
            producer.send("samza", OutgoingMessageEnvelope(ss, eos, None, None, p))
    producer.flush("samza")
    producer.stop()
    down = run(cfg.with_overrides({"app.stage": "1"}))
    assert statuses(down) == {"completed"}
    counts = dict(read_all(cfg, "counts"))
    assert counts == {w: words.count(w) for w in set(words)}


def test_a_stage_job_reading_a_drain_samza_wrote_fails_with_one_line_naming_where(samza: SamzaWire, tmp_path) -> None:
    cfg = _two_stage_config(tmp_path)
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    stream = "wc-1-partition_by-by-word"
    create(cfg, stream, 3)
    producer = system_factory(cfg, "log").get_producer("log", cfg)
    producer.register("samza")
    producer.start()
    ss = SystemStream("log", stream)
    user = IntermediateMessageSerde(JsonSerde())
    producer.send("samza", OutgoingMessageEnvelope(ss, user.to_bytes(1), json.dumps("w").encode(), None, 1))
    drain = _samza_encode(samza, DrainMessage("Partition 0", "run-1"))
    producer.send("samza", OutgoingMessageEnvelope(ss, drain, None, None, 1))
    producer.flush("samza")
    producer.stop()
    result = ThreadJobRunner(cfg.with_overrides({"app.stage": "1", "job.factory.class": "thread"})).run()
    assert not result.succeeded
    line = result.summary_line()
    assert "UnsupportedControlMessageError" in line and "\n" not in line
    assert f"stream log.{stream}, partition 1, offset 1" in line and "'run-1'" in line
