"""The intermediate-stream message format, byte for byte (Samza 1.8's; tests/samza_interop runs
Samza's own IntermediateMessageSerde over the same bytes)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samza_dagster.control import (
    ControlMessageError,
    DrainMessage,
    EndOfStreamMessage,
    IntermediateMessageSerde,
    WatermarkMessage,
    deserialize_intermediate_message,
)
from samza_dagster.serde import BytesSerde, JsonSerde, SerdeError, StringSerde
from samza_dagster.system import IncomingMessageEnvelope, SystemStreamPartition

SERDE = IntermediateMessageSerde(JsonSerde())


def test_user_message_is_type_byte_zero_then_user_serde_bytes():
    data = SERDE.to_bytes({"user": "alice", "n": 3})
    assert data == b'\x00{"user":"alice","n":3}'
    assert SERDE.from_bytes(b'\x00{"user":"alice","n":3}') == {"user": "alice", "n": 3}


def test_end_of_stream_bytes_match_samza_json():
    expected = b'\x02{"taskName":"Partition 0","version":1}'
    assert SERDE.to_bytes(EndOfStreamMessage("Partition 0")) == expected
    assert SERDE.from_bytes(expected) == EndOfStreamMessage("Partition 0", None, 1)


def test_watermark_bytes_put_its_timestamp_before_the_inherited_fields():
    expected = b'\x01{"timestamp":1500000000123,"taskName":"Partition 2","version":1}'
    assert SERDE.to_bytes(WatermarkMessage(1500000000123, "Partition 2")) == expected
    assert SERDE.from_bytes(expected) == WatermarkMessage(1500000000123, "Partition 2")


def test_a_count_given_to_a_message_is_never_written():
    assert SERDE.to_bytes(EndOfStreamMessage("Partition 0", 4)) == b'\x02{"taskName":"Partition 0","version":1}'
    assert b"taskCount" not in SERDE.to_bytes(WatermarkMessage(5, "Partition 0", 4))


def test_the_design_documents_form_with_task_count_is_still_read():
    old_eos = b'\x02{"taskName":"Partition 0","taskCount":4,"version":1}'
    old_wm = b'\x01{"taskName":"Partition 2","taskCount":3,"version":1,"timestamp":1500000000123}'
    assert SERDE.from_bytes(old_eos) == EndOfStreamMessage("Partition 0", 4)
    assert SERDE.from_bytes(old_wm) == WatermarkMessage(1500000000123, "Partition 2", 3)


def test_drain_bytes_match_samza_json_and_round_trip():
    expected = b'\x03{"taskName":"Partition 1","version":1,"runId":"run-7"}'
    assert SERDE.to_bytes(DrainMessage("Partition 1", "run-7")) == expected
    assert SERDE.from_bytes(expected) == DrainMessage("Partition 1", "run-7")
    assert SERDE.from_bytes(b'\x03{"runId":null,"version":1,"taskName":null}') == DrainMessage(None, None)


def test_system_emitted_control_message_has_null_task_name():
    data = SERDE.to_bytes(EndOfStreamMessage(None))
    assert data == b'\x02{"taskName":null,"version":1}'
    assert SERDE.from_bytes(data).task_name is None


def test_control_fields_read_in_any_order_and_unknown_fields_ignored():
    data = b'\x01{"timestamp":7,"version":1,"extra":[1],"taskCount":2,"taskName":"t"}'
    assert SERDE.from_bytes(data) == WatermarkMessage(7, "t", 2)


def test_non_ascii_task_name_is_written_as_utf8_not_escaped():
    data = SERDE.to_bytes(EndOfStreamMessage('tâche "1"'))
    assert data == '\x02{"taskName":"tâche \\"1\\"","version":1}'.encode()
    assert SERDE.from_bytes(data).task_name == 'tâche "1"'


@pytest.mark.parametrize(
    "message",
    [
        {"a": [1, 2, {"b": None}]},
        "text",
        EndOfStreamMessage("Partition 11"),
        WatermarkMessage(0, "Partition 0"),
        WatermarkMessage(-5, None),
        DrainMessage("Partition 3", "run"),
    ],
)
def test_round_trip(message):
    assert SERDE.from_bytes(SERDE.to_bytes(message)) == message


def test_without_user_serde_user_bodies_are_bytes():
    serde = IntermediateMessageSerde(None)
    assert serde.to_bytes(b"raw") == b"\x00raw"
    assert serde.from_bytes(b"\x00raw") == b"raw"
    assert IntermediateMessageSerde(StringSerde()).from_bytes(b"\x00h\xc3\xa9") == "hé"


def test_unknown_type_byte_is_a_control_message_error():
    with pytest.raises(ControlMessageError, match="unknown intermediate stream message type 4"):
        SERDE.from_bytes(b"\x04{}")


def test_unsupported_version_is_refused():
    with pytest.raises(ControlMessageError, match="unsupported end-of-stream control message version 2"):
        SERDE.from_bytes(b'\x02{"taskName":"t","taskCount":1,"version":2}')


@pytest.mark.parametrize(
    "data, match",
    [
        (b"", "empty intermediate stream message"),
        (b"\x02not json", "malformed end-of-stream"),
        (b"\x02[1]", "not a JSON object"),
        (b'\x02{"taskName":5,"taskCount":1,"version":1}', "taskName must be a string"),
        (b'\x02{"taskName":"t","taskCount":"1","version":1}', "taskCount must be a non-negative int"),
        (b'\x01{"taskName":"t","taskCount":1,"version":1}', "timestamp must be an int"),
        (b'\x01{"taskName":"t","taskCount":1,"version":1,"timestamp":1.5}', "timestamp must be an int"),
        (b"\x02\xff\xfe", "malformed end-of-stream"),
    ],
)
def test_malformed_input_is_a_control_message_error(data, match):
    with pytest.raises(ControlMessageError, match=match):
        SERDE.from_bytes(data)


def test_control_message_error_is_a_serde_error_so_drop_on_error_handling_applies():
    assert issubclass(ControlMessageError, SerdeError)


def test_user_serde_must_produce_bytes():
    with pytest.raises(ControlMessageError, match="must serialize to bytes"):
        IntermediateMessageSerde(None).to_bytes({"not": "bytes"})


def test_envelope_helper_names_stream_partition_and_offset():
    ssp = SystemStreamPartition("log", "job-1-partition_by-p1", 3)
    envelope = IncomingMessageEnvelope(ssp, "42", None, b"\x09oops")
    with pytest.raises(ControlMessageError) as info:
        deserialize_intermediate_message(SERDE, envelope)
    err = info.value
    assert (err.stream, err.partition, err.offset) == ("log.job-1-partition_by-p1", 3, "42")
    assert "stream 'log.job-1-partition_by-p1', partition 3, offset 42" in str(err)
    ok = IncomingMessageEnvelope(ssp, "43", None, b'\x02{"taskName":"t","taskCount":1,"version":1}')
    assert deserialize_intermediate_message(SERDE, ok) == EndOfStreamMessage("t", 1)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_raise_only_documented_errors(data):
    # BytesSerde for the user body: everything past byte 0 is then the framing's own business.
    serde = IntermediateMessageSerde(BytesSerde())
    try:
        serde.from_bytes(data)
    except ControlMessageError:
        pass


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([b"\x01", b"\x02", b"\x03"]),
    st.dictionaries(
        st.sampled_from(["taskName", "taskCount", "version", "timestamp", "runId", "x"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(allow_nan=False),
            st.text(max_size=5),
            st.lists(st.integers(), max_size=2),
        ),
    ),
)
def test_arbitrary_json_control_bodies_raise_only_control_message_errors(prefix, fields):
    try:
        message = SERDE.from_bytes(prefix + json.dumps(fields).encode())
    except ControlMessageError:
        return
    assert isinstance(message, (EndOfStreamMessage, WatermarkMessage, DrainMessage))
    # an old-form count is read, never written: the round trip gives Samza 1.8's form
    written = message if isinstance(message, DrainMessage) else dataclasses.replace(message, task_count=None)
    assert SERDE.from_bytes(SERDE.to_bytes(message)) == written
