"""The control-message handler on Samza 1.8's messages: producer counts from the job model and
plan (the messages carry none), the old form's taskCount still honoured, drain refused."""

from __future__ import annotations

import pytest

from samza_dagster.control import (
    ControlStateError,
    DrainMessage,
    EndOfStreamMessage,
    IntermediateMessageSerde,
    UnsupportedControlMessageError,
    WatermarkMessage,
)
from samza_dagster.control.handler import ControlMessageHandler, IntermediateStreamDecoder
from samza_dagster.model import IncomingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.serde import SerdeError

INTER = SystemStream("log", "job-1-partition_by-p1")
I0, I1 = (SystemStreamPartition(*INTER, p) for p in (0, 1))
SERDE = IntermediateMessageSerde()


def _decoded(ssp: SystemStreamPartition, offset: str, message: object) -> IncomingMessageEnvelope:
    """An envelope as the task instance hands it over: the engine's bytes decoded."""
    envelope = IncomingMessageEnvelope(ssp, offset, None, SERDE.to_bytes(message))
    assert IntermediateStreamDecoder(None, None).decode(envelope) is False
    return envelope


def test_samza_form_end_of_stream_ends_a_partition_after_the_counted_producers():
    watermarks: list[tuple[SystemStreamPartition, int]] = []
    handler = ControlMessageHandler([I0, I1], {INTER: 2}, lambda ssp, wm: watermarks.append((ssp, wm)))
    assert handler(_decoded(I0, "5", EndOfStreamMessage("Partition 0"))) is None
    ended = handler(_decoded(I0, "6", EndOfStreamMessage("Partition 1")))
    assert ended is not None and ended.ssp == I0
    assert handler(_decoded(I0, "7", WatermarkMessage(10, "Partition 0"))) is None
    handler(_decoded(I1, "1", WatermarkMessage(30, "Partition 1")))
    handler(_decoded(I1, "2", WatermarkMessage(20, "Partition 0")))
    assert watermarks == [(I1, 20)]


def test_samza_form_message_on_a_stream_of_unknown_count_names_stream_partition_and_offset():
    handler = ControlMessageHandler([I0, I1], {}, lambda ssp, wm: None)
    with pytest.raises(ControlStateError, match=r"log\.job-1-partition_by-p1, partition 1, offset 9: the number of"):
        handler(_decoded(I1, "9", EndOfStreamMessage("Partition 0")))


def test_an_old_form_task_count_still_gives_an_unknown_count():
    handler = ControlMessageHandler([I0], {}, lambda ssp, wm: None)
    old = IncomingMessageEnvelope(I0, "3", None, b'\x02{"taskName":"Partition 0","taskCount":1,"version":1}')
    assert IntermediateStreamDecoder(None, None).decode(old) is False
    assert handler(old) is not None


def test_an_old_form_task_count_that_disagrees_with_the_plan_fails():
    handler = ControlMessageHandler([I0], {INTER: 2}, lambda ssp, wm: None)
    old = IncomingMessageEnvelope(I0, "3", None, b'\x02{"taskName":"Partition 0","taskCount":3,"version":1}')
    IntermediateStreamDecoder(None, None).decode(old)
    with pytest.raises(ControlStateError, match="says 3 producer tasks, but this job expects 2"):
        handler(old)


def test_a_drain_message_is_refused_with_one_line_naming_stream_partition_and_offset():
    handler = ControlMessageHandler([I0, I1], {INTER: 2}, lambda ssp, wm: None)
    with pytest.raises(UnsupportedControlMessageError) as info:
        handler(_decoded(I1, "41", DrainMessage("Partition 0", "run-3")))
    text = str(info.value)
    assert "\n" not in text
    assert "stream log.job-1-partition_by-p1, partition 1, offset 41" in text
    assert "'run-3'" in text and "drain" in text
    # not a deserialization error: task.drop.deserialization.errors must not skip a drain silently
    assert not isinstance(info.value, SerdeError)
