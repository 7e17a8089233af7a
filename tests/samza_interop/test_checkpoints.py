"""The checkpoint stream against Apache Samza 1.8.0's own ``KafkaCheckpointLogKeySerde``,
``CheckpointV1Serde`` and ``CheckpointV2Serde`` (with ``KafkaStateCheckpointMarker``): what a
job's commit writes, Samza reads with every offset equal, and the reverse; the engine's earlier
checkpoints still read; a foreign or unreadable checkpoint is an error, never an empty one."""

from __future__ import annotations

import json

import pytest

from samza_dagster.checkpoint import Checkpoint, CheckpointError, checkpoint_stream_name
from samza_dagster.checkpoint.serde import (
    CONTROL_STATE_MARKERS,
    KAFKA_STATE_BACKEND_FACTORY,
    decode_checkpoint_message,
    encode_checkpoint_messages,
)
from samza_dagster.container import SamzaContainer
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.system import inmemory
from samza_dagster.system.inmemory import InMemorySystemFactory
from tests.apps.harness import create_stream, inmemory_config, job_model, produce, read_checkpoints
from tests.samza_interop.harness import SamzaWire, b64, unb64

GROUP_BY_PARTITION = "org.apache.samza.container.grouper.stream.GroupByPartitionFactory"
CLICKS = SystemStreamPartition("kafka", "clicks", 3)
DOTTED = SystemStreamPartition("kafka", "page.views", 0)
CHANGELOG = SystemStreamPartition("kafka", "job-counts-changelog", 3)
CHECKPOINT = Checkpoint(
    {CLICKS: "41", DOTTED: "7"},
    {"counts": (CHANGELOG, "99")},
    {"kafka.job-1-partition_by-p": {"totalTasks": 2, "partitions": {"0": {"tasks": ["Partition 1"]}}}},
    {"kafka.job-1-partition_by-p": {"totalTasks": 2, "partitions": {"0": {"watermark": 5}}}},
)


@pytest.fixture(autouse=True)
def _fresh_inmemory():
    inmemory.reset()
    yield
    inmemory.reset()


def _offsets(entries: list[dict]) -> dict[SystemStreamPartition, str | None]:
    return {SystemStreamPartition(e["system"], e["stream"], e["partition"]): e["offset"] for e in entries}


def test_samza_reads_both_checkpoints_a_commit_writes(samza: SamzaWire) -> None:
    (v1_key, v1), (v2_key, v2) = encode_checkpoint_messages("Partition 3", CHECKPOINT, "group-by-partition", "17-42")
    assert samza.call("checkpoint.key.decode", bytes=b64(v1_key)) == {
        "type": "checkpoint",
        "taskName": "Partition 3",
        "grouperFactory": GROUP_BY_PARTITION,
    }
    assert samza.call("checkpoint.key.decode", bytes=b64(v2_key))["type"] == "checkpoint-v2"
    # CheckpointV1: the input offsets, and the changelog as Samza's TaskInstance writes it there
    changelog_entry = samza.call("checkpoint.changelog-offset", checkpointId="17-42", offset="99")["value"]
    assert _offsets(samza.call("checkpoint.v1.decode", bytes=b64(v1))["offsets"]) == {
        CLICKS: "41",
        DOTTED: "7",
        CHANGELOG: changelog_entry,
    }
    # CheckpointV2: the input offsets, the store's KafkaStateCheckpointMarker, the control markers carried
    got = samza.call("checkpoint.v2.decode", bytes=b64(_without_dotted_stream(v2)))
    assert got["checkpointId"] == "17-42"
    assert _offsets(got["offsets"]) == {CLICKS: "41"}
    assert got["kafkaMarkers"] == {
        "counts": {"system": "kafka", "stream": "job-counts-changelog", "partition": 3, "offset": "99"}
    }
    control = got["stateCheckpointMarkers"][CONTROL_STATE_MARKERS]
    assert json.loads(control["end-of-stream"]) == CHECKPOINT.end_of_stream
    assert json.loads(control["watermarks"]) == CHECKPOINT.watermarks


def _without_dotted_stream(v2: bytes) -> bytes:
    """Samza's own CheckpointV2 reader splits input-offsets keys on every dot, so it cannot read a
    stream name with one (its writer writes them all the same): the stream is left out for it."""
    body = json.loads(v2)
    body["input-offsets"] = {k: v for k, v in body["input-offsets"].items() if "page.views" not in k}
    return json.dumps(body).encode()


def test_the_engine_reads_a_dotted_stream_samzas_v2_writer_wrote(samza: SamzaWire) -> None:
    offsets = [{"system": "kafka", "stream": "page.views", "partition": 0, "offset": "7"}]
    written = unb64(samza.call("checkpoint.v2.encode", checkpointId="1-2", offsets=offsets)["bytes"])
    key = unb64(
        samza.call(
            "checkpoint.key.encode", type="checkpoint-v2", taskName="Partition 0", grouperFactory=GROUP_BY_PARTITION
        )["bytes"]
    )
    message = decode_checkpoint_message(key, written, "5", "group-by-partition")
    assert message.checkpoint is not None and message.checkpoint.offsets == {DOTTED: "7"}


def test_the_engine_reads_samzas_v1_and_v2_checkpoints(samza: SamzaWire) -> None:
    offsets = [
        {"system": "kafka", "stream": "clicks", "partition": 3, "offset": "41"},
        {"system": "kafka", "stream": "page.views", "partition": 0, "offset": "7"},
    ]
    changelog = samza.call("checkpoint.changelog-offset", checkpointId="1700000000123-456789", offset="99")["value"]
    v1_offsets = [*offsets, {"system": "kafka", "stream": "job-counts-changelog", "partition": 3, "offset": changelog}]
    key = {"taskName": "Partition 3", "grouperFactory": GROUP_BY_PARTITION}
    v1_key = unb64(samza.call("checkpoint.key.encode", type="checkpoint", **key)["bytes"])
    v1 = unb64(samza.call("checkpoint.v1.encode", offsets=v1_offsets)["bytes"])
    from_v1 = decode_checkpoint_message(v1_key, v1, "0", "group-by-partition")
    assert (from_v1.task_name, from_v1.form) == ("Partition 3", "checkpoint")
    assert from_v1.checkpoint is not None and from_v1.checkpoint.offsets == {CLICKS: "41", DOTTED: "7"}
    v2_key = unb64(samza.call("checkpoint.key.encode", type="checkpoint-v2", **key)["bytes"])
    markers = {"counts": {"system": "kafka", "stream": "job-counts-changelog", "partition": 3, "offset": "99"}}
    v2 = unb64(
        samza.call(
            "checkpoint.v2.encode", checkpointId="1700000000123-456789", offsets=offsets[:1], kafkaMarkers=markers
        )["bytes"]
    )
    from_v2 = decode_checkpoint_message(v2_key, v2, "1", "group-by-partition")
    assert from_v2.checkpoint == Checkpoint({CLICKS: "41"}, {"counts": (CHANGELOG, "99")})


def test_a_checkpoint_of_another_grouper_is_refused(samza: SamzaWire) -> None:
    key = unb64(
        samza.call(
            "checkpoint.key.encode",
            type="checkpoint",
            taskName="Partition 0",
            grouperFactory="org.apache.samza.container.grouper.stream.GroupBySystemStreamPartitionFactory",
        )["bytes"]
    )
    value = unb64(samza.call("checkpoint.v1.encode", offsets=[])["bytes"])
    with pytest.raises(CheckpointError, match="at offset 8 was written with grouper"):
        decode_checkpoint_message(key, value, "8", "group-by-partition")


def test_samzas_v1_under_the_engines_old_key_is_an_error_not_an_empty_checkpoint(samza: SamzaWire) -> None:
    offsets = [{"system": "kafka", "stream": "clicks", "partition": 3, "offset": "41"}]
    samza_v1 = unb64(samza.call("checkpoint.v1.encode", offsets=offsets)["bytes"])
    with pytest.raises(CheckpointError, match=r"task 'Partition 3' at offset 4"):
        decode_checkpoint_message(b"Partition 3", samza_v1, "4", "group-by-partition")


def test_the_engines_earlier_checkpoints_still_read() -> None:
    old = Checkpoint({CLICKS: "41"}, {"counts": (CHANGELOG, None)}, {"x": {"a": 1}}, {})
    message = decode_checkpoint_message(b"Partition 3", old.to_bytes(), "0", "group-by-partition")
    assert (message.task_name, message.form, message.checkpoint) == ("Partition 3", "engine", old)


# -- whole jobs: a job resumes from a checkpoint Samza's classes wrote; Samza reads what a job committed --


def _job(name: str):
    return inmemory_config(name, **{"systems.mem.streams.input.samza.bounded": "true"})


def _send_checkpoint(config, name: str, key: bytes, value: bytes) -> None:
    producer = InMemorySystemFactory().get_producer("mem", config)
    producer.register("samza")
    producer.start()
    producer.send(
        "samza",
        OutgoingMessageEnvelope(SystemStream("mem", checkpoint_stream_name(name, "1")), value, key=key, partition=0),
    )
    producer.flush("samza")


def test_a_job_resumes_at_the_offsets_of_a_checkpoint_samza_wrote(samza: SamzaWire) -> None:
    config = _job("fromsamza")
    create_stream(config, "mem", "input", 1)
    create_stream(config, "mem", checkpoint_stream_name("fromsamza", "1"), 1)
    produce(config, "mem", "input", [(0, None, i) for i in range(10)])
    key = unb64(
        samza.call(
            "checkpoint.key.encode", type="checkpoint", taskName="Partition 0", grouperFactory=GROUP_BY_PARTITION
        )["bytes"]
    )
    value = unb64(
        samza.call(
            "checkpoint.v1.encode", offsets=[{"system": "mem", "stream": "input", "partition": 0, "offset": "5"}]
        )["bytes"]
    )
    _send_checkpoint(config, "fromsamza", key, value)
    # offsets 0..5 were processed under Samza: the job takes up at 6
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 4


def test_samza_reads_the_checkpoints_a_job_committed(samza: SamzaWire) -> None:
    config = _job("tosamza")
    create_stream(config, "mem", "input", 1)
    produce(config, "mem", "input", [(0, None, i) for i in range(10)])
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 10
    consumer = InMemorySystemFactory().get_consumer("mem", config)
    ssp = SystemStreamPartition("mem", checkpoint_stream_name("tosamza", "1"), 0)
    consumer.register(ssp, "0")
    consumer.start()
    envelopes = [e for e in consumer.poll([ssp], 0.5).get(ssp, []) if not e.is_end_of_stream]
    consumer.stop()
    assert envelopes, "the job wrote no checkpoint"
    seen: dict[str, dict] = {}
    for envelope in envelopes:
        key = samza.call("checkpoint.key.decode", bytes=b64(envelope.key))
        assert (key["taskName"], key["grouperFactory"]) == ("Partition 0", GROUP_BY_PARTITION)
        op = "checkpoint.v1.decode" if key["type"] == "checkpoint" else "checkpoint.v2.decode"
        seen[key["type"]] = samza.call(op, bytes=b64(envelope.message))
    assert set(seen) == {"checkpoint", "checkpoint-v2"}
    for form in seen.values():
        assert _offsets(form["offsets"]) == {SystemStreamPartition("mem", "input", 0): "9"}
    assert read_checkpoints(config)["Partition 0"].offsets == {SystemStreamPartition("mem", "input", 0): "9"}
    assert KAFKA_STATE_BACKEND_FACTORY not in seen["checkpoint-v2"]["stateCheckpointMarkers"]  # a stateless job
