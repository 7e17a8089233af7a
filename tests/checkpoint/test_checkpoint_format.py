"""Checkpoint JSON format, stream naming, malformed messages and starting offsets."""

from __future__ import annotations

import json

import pytest

from samza_dagster.checkpoint import Checkpoint, CheckpointError, checkpoint_stream_name
from samza_dagster.container import SamzaContainer
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system import SystemStreamPartition, inmemory
from tests.apps.harness import create_stream, inmemory_config, job_model, produce, read_checkpoints


@pytest.fixture(autouse=True)
def _fresh_inmemory():
    inmemory.reset()
    yield
    inmemory.reset()


def test_stream_name_replaces_underscores_in_both_parts():
    assert checkpoint_stream_name("my_job", "a_1") == "__samza_checkpoint_ver_1_for_my-job_a-1"


def test_round_trip_keeps_offsets_changelogs_and_control_bookkeeping():
    ssp = SystemStreamPartition("log", "a.b", 2)
    cl = SystemStreamPartition("log", "counts-changelog", 2)
    cp = Checkpoint({ssp: "41"}, {"counts": (cl, "99")}, {"log.x": {"tasks": ["t"]}}, {"log.x": {"t": 5}})
    body = json.loads(cp.to_bytes())
    assert set(body) == {"version", "offsets", "changelog_offsets", "end_of_stream", "watermarks"}
    assert body["offsets"] == [{"system": "log", "stream": "a.b", "partition": 2, "offset": "41"}]
    back = Checkpoint.from_bytes(cp.to_bytes())
    assert back == cp


@pytest.mark.parametrize("value", [b"nope", b"[]", b'{"offsets":[{"system":"x"}]}', b'{"version":7}'])
def test_malformed_checkpoint_names_task_and_offset(value):
    with pytest.raises(CheckpointError, match=r"task 'Partition 1' at offset 12"):
        Checkpoint.from_bytes(value, "Partition 1", "12")


def test_container_fails_clearly_on_a_malformed_checkpoint_message():
    config = inmemory_config("badcp")
    create_stream(config, "mem", "input", 1)
    stream = checkpoint_stream_name("badcp", "1")
    create_stream(config, "mem", stream, 1)
    from samza_dagster.system.inmemory import InMemorySystemFactory

    producer = InMemorySystemFactory().get_producer("mem", config)
    producer.register("x")
    producer.start()
    producer.send("x", OutgoingMessageEnvelope(SystemStream("mem", stream), b"{bad", key=b"Partition 0", partition=0))
    producer.flush("x")
    with pytest.raises(CheckpointError, match=r"'Partition 0' at offset 0"):
        SamzaContainer("0", job_model(config)).run()


def _unbounded(name: str, **extra):
    return inmemory_config(name, **{"systems.mem.streams.input.samza.bounded": "true", **extra})


def test_restart_resumes_after_the_checkpoint_and_reset_offset_ignores_it():
    config = _unbounded("resume")
    create_stream(config, "mem", "input", 1)
    produce(config, "mem", "input", [(0, None, i) for i in range(10)])
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 10
    produce(config, "mem", "input", [(0, None, i) for i in range(5)])
    again = SamzaContainer("0", job_model(config)).run()
    assert again.messages_processed == 5
    assert read_checkpoints(config)["Partition 0"].offsets[("mem", "input", 0)] == "14"
    reset = _unbounded("resume", **{"systems.mem.streams.input.samza.reset.offset": "true"})
    assert SamzaContainer("0", job_model(reset)).run().messages_processed == 15


def test_offset_default_upcoming_skips_existing_messages():
    config = _unbounded("upcoming", **{"systems.mem.samza.offset.default": "upcoming"})
    create_stream(config, "mem", "input", 1)
    produce(config, "mem", "input", [(0, None, i) for i in range(10)])
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 0
