"""Issue 12.4 — poison and malformed input.

End to end on the embedded log: an undecodable message fails the job naming the stream,
partition and offset; ``task.drop.deserialization.errors=true`` counts and skips it;
``task.dlq.stream`` sends its raw bytes with the error to a dead-letter stream and skips it
(also across a restart: committed dead letters are not lost).
Property-based: arbitrary bytes at every reader of untrusted bytes raise only its documented
error — IntermediateMessageSerde (ControlMessageError / the user serde's SerdeError), the
coordinator-stream message decoder (CoordinatorStreamFormatError; the reader skips such
messages, so the coordinator keeps going), the checkpoint reader (CheckpointError), the
.properties loader (ConfigError), JsonSerde (SerdeError, also for deep nesting).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samza_dagster.checkpoint import Checkpoint, CheckpointError
from samza_dagster.checkpoint.serde import decode_checkpoint_message
from samza_dagster.config import Config, ConfigError
from samza_dagster.config.properties import load_properties, parse_properties
from samza_dagster.container import SamzaContainer
from samza_dagster.container.dead_letter import parse_dead_letter
from samza_dagster.container.errors import DeserializationError
from samza_dagster.control.errors import ControlMessageError
from samza_dagster.control.serde import IntermediateMessageSerde
from samza_dagster.coordinator.stream.messages import CoordinatorStreamFormatError, CoordinatorStreamMessage
from samza_dagster.serde import JsonSerde, SerdeError, StringSerde
from samza_dagster.task.api import StreamTask
from tests.apps.harness import FnTaskFactory, create_stream, job_model, produce
from tests.reliability.test_reliability_crash import read_all

BAD = b'{"id": 2, "oops'  # truncated JSON


class Collect(StreamTask):
    def __init__(self) -> None:
        self.seen: list = []

    def process(self, envelope, collector, coordinator):
        self.seen.append(envelope.message["id"])


def _config(tmp_path, **extra: str) -> Config:
    entries = {
        "job.name": "poison",
        "job.default.system": "log",
        "task.inputs": "log.orders",
        "systems.log.log.path": str(tmp_path / "log"),
        "systems.log.streams.orders.samza.msg.serde": "json",
        "systems.log.streams.orders.samza.bounded": "true",
        "task.commit.ms": "50",
    }
    entries.update(extra)
    return Config(entries)


def _fill(config: Config) -> None:
    create_stream(config, "log", "orders", 2)
    good = [(i % 2, None, json.dumps({"id": i}).encode()) for i in range(10)]
    good.insert(5, (1, b"k-bad", BAD))  # partition 1, offset 2 (partition 1 got ids 1, 3 before it)
    produce(config, "log", "orders", good)


def _run(config: Config) -> tuple[SamzaContainer, FnTaskFactory, BaseException | None]:
    factory = FnTaskFactory(lambda name: Collect())
    container = SamzaContainer("0", job_model(config), task_factory=factory)
    error = None
    try:
        container.run()
    except BaseException as exc:  # noqa: BLE001 - inspected by the tests
        error = exc
    return container, factory, error


def _seen(factory: FnTaskFactory) -> list:
    return sorted(i for t in factory.tasks.values() for i in t.seen)


def test_undecodable_message_fails_the_job_naming_stream_partition_and_offset(tmp_path):
    config = _config(tmp_path)
    _fill(config)
    container, _, error = _run(config)
    assert isinstance(error, DeserializationError)
    assert "stream log.orders partition 1 offset 2" in str(error)
    assert "json: cannot decode" in str(error)
    assert container.summary is not None and "offset 2" in container.summary.error


def test_drop_deserialization_errors_counts_and_skips(tmp_path):
    config = _config(tmp_path, **{"task.drop.deserialization.errors": "true"})
    _fill(config)
    container, factory, error = _run(config)
    assert error is None
    assert _seen(factory) == list(range(10))
    tasks = container.summary.metrics["tasks"]
    assert sum(t["deserialization_errors_dropped"] for t in tasks.values()) == 1
    # the bad offset counts as processed: the checkpoint moved past it
    assert container.last_checkpoints["Partition 1"].offsets[("log", "orders", 1)] == "5"


def test_dead_letter_stream_receives_raw_bytes_with_the_error(tmp_path):
    config = _config(tmp_path, **{"task.dlq.stream": "log.orders-dlq"})
    _fill(config)
    container, factory, error = _run(config)
    assert error is None
    assert _seen(factory) == list(range(10))
    tasks = container.summary.metrics["tasks"]
    assert sum(t["deserialization_errors_dead_lettered"] for t in tasks.values()) == 1
    letters = read_all(config, "orders-dlq")
    assert len(letters) == 1
    assert letters[0].key == b"k-bad"
    body = parse_dead_letter(letters[0].message)
    assert body["message"] == BAD and body["key"] == b"k-bad"
    assert (body["system"], body["stream"], body["partition"], body["offset"]) == ("log", "orders", 1, "2")
    assert body["task"] == "Partition 1" and "json: cannot decode" in body["error"]
    # a restart resumes after the checkpoint: the dead letter is not sent again
    container, factory, error = _run(config)
    assert error is None and _seen(factory) == []
    assert len(read_all(config, "orders-dlq")) == 1


def test_malformed_dlq_key_names_the_key(tmp_path):
    config = _config(tmp_path, **{"task.dlq.stream": "no-dot"})
    _fill(config)
    _, _, error = _run(config)
    assert isinstance(error, ConfigError) and "task.dlq.stream" in str(error)


# -- property-based: arbitrary bytes only ever raise the documented error ------------------------
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
maybe_json_bytes = st.one_of(
    st.binary(max_size=200),
    json_like.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(
        st.sampled_from(
            [
                "version",
                "offsets",
                "changelog_offsets",
                "type",
                "key",
                "values",
                "end_of_stream",
                "watermarks",
                "taskName",
                "taskCount",
                "timestamp",
                "system",
                "partition",
            ]
        ),
        json_like,
        max_size=5,
    ).map(lambda v: json.dumps(v).encode()),
)


@FAST
@given(
    st.one_of(
        st.binary(max_size=200),
        maybe_json_bytes.map(lambda b: bytes([1]) + b),
        maybe_json_bytes.map(lambda b: bytes([2]) + b),
        maybe_json_bytes.map(lambda b: bytes([0]) + b),
    )
)
def test_intermediate_message_serde_raises_only_serde_errors(data):
    for serde in (
        IntermediateMessageSerde(JsonSerde()),
        IntermediateMessageSerde(StringSerde()),
        IntermediateMessageSerde(),
    ):
        try:
            serde.from_bytes(data)
        except (ControlMessageError, SerdeError):
            pass


@FAST
@given(st.one_of(st.none(), maybe_json_bytes), st.one_of(st.none(), maybe_json_bytes))
def test_coordinator_stream_message_decode_raises_only_its_format_error(key, value):
    try:
        CoordinatorStreamMessage.decode(key, value)
    except CoordinatorStreamFormatError:
        pass


@FAST
@given(maybe_json_bytes)
def test_checkpoint_reader_raises_only_checkpoint_error(data):
    try:
        Checkpoint.from_bytes(data, "Partition 0", "7")
    except CheckpointError as exc:
        assert "Partition 0" in str(exc) and "offset 7" in str(exc)


samza_key_like = st.fixed_dictionaries(
    {},
    optional={
        "systemstreampartition-grouper-factory": st.sampled_from(
            ["org.apache.samza.container.grouper.stream.GroupByPartitionFactory", "x", ""]
        ),
        "taskName": st.one_of(st.text(max_size=5), st.integers()),
        "type": st.sampled_from(["checkpoint", "checkpoint-v2", "checkpoint-v3", ""]),
    },
).map(lambda v: json.dumps(v).encode())
samza_value_like = st.dictionaries(
    st.sampled_from(["checkpoint-id", "input-offsets", "state-checkpoint-markers", "version", "k"]),
    st.one_of(json_like, st.dictionaries(st.text(max_size=12), st.one_of(st.none(), st.text(max_size=8)), max_size=3)),
    max_size=4,
).map(lambda v: json.dumps(v).encode())


@FAST
@given(
    st.one_of(st.none(), st.binary(max_size=40), samza_key_like),
    st.one_of(st.none(), maybe_json_bytes, samza_value_like),
)
def test_checkpoint_stream_messages_raise_only_checkpoint_error(key, value):
    """Samza's forms and the engine's earlier one: anything else is a CheckpointError naming the
    offset, and a message read is a checkpoint or a tombstone — never anything else."""
    try:
        message = decode_checkpoint_message(key, value, "7", "group-by-partition")
    except CheckpointError as exc:
        assert "offset 7" in str(exc)
        return
    assert message.checkpoint is None or isinstance(message.checkpoint, Checkpoint)


@FAST
@given(st.text(max_size=300))
def test_properties_parser_raises_only_config_error(text):
    try:
        result = parse_properties(text)
    except ConfigError:
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.items())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_properties_loader_on_arbitrary_file_bytes_raises_only_config_error(tmp_path, data):
    path = tmp_path / "job.properties"
    path.write_bytes(data)
    try:
        load_properties(path)
    except ConfigError:
        pass


@FAST
@given(maybe_json_bytes)
def test_json_serde_raises_only_serde_error(data):
    try:
        JsonSerde().from_bytes(data)
    except SerdeError:
        pass


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_json_serde_deep_nesting_is_a_serde_error(depth):
    with pytest.raises(SerdeError, match="nested too deeply"):
        JsonSerde().from_bytes(b"[" * depth + b"]" * depth)
    nested: list = []
    for _ in range(depth):
        nested = [nested]
    with pytest.raises(SerdeError, match="nested too deeply"):
        JsonSerde().to_bytes(nested)


def test_coordinator_stream_reader_skips_garbage_and_keeps_the_config(tmp_path):
    """Garbage written to the coordinator stream never stops the coordinator: the reader skips
    each malformed message (logged with its offset) and still folds the valid ones."""
    from samza_dagster.coordinator.stream.reader_writer import (
        CoordinatorStreamLocation,
        CoordinatorStreamWriter,
        read_coordinator_stream,
    )

    config = Config({"job.name": "poison", "systems.log.log.path": str(tmp_path / "log")})
    with CoordinatorStreamWriter(config) as writer:
        writer.send(CoordinatorStreamMessage.set_config("test", "a.key", "before"))
    loc = CoordinatorStreamLocation.from_config(config)
    produce(
        config,
        loc.system,
        loc.stream,
        [(0, b"\xff\xfe", b"\x00garbage"), (0, b"[1,2]", b"{}"), (0, None, None), (0, b'["x"]', b"[" * 100_000)],
    )
    with CoordinatorStreamWriter(config) as writer:
        writer.send(CoordinatorStreamMessage.set_config("test", "b.key", "after"))
    state = read_coordinator_stream(config)
    assert state.config["a.key"] == "before" and state.config["b.key"] == "after"
