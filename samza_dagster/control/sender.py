"""ControlMessageSender: writes end-of-stream and watermark messages in-band to every
partition of an intermediate stream (Samza design).

A producer task sends one control message per partition of each intermediate stream it
writes to, so every downstream consumer of every partition hears from every producer task;
the downstream reconciles them over the producer tasks its job model and plan count (Samza
1.8's messages carry no count). The producer is flushed right
after, because a downstream stage waiting for end-of-stream must not wait for the next commit
(the messages before it on the same producer are flushed with it, keeping their order).
"""

from __future__ import annotations

from collections.abc import Mapping

from samza_dagster.control.messages import EndOfStreamMessage, WatermarkMessage
from samza_dagster.control.serde import encode_control_message
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.protocols import SystemProducer


class ControlMessageSender:
    """One per task: ``source`` is the task name the producers know it by."""

    __slots__ = ("source", "task_name", "producers")

    def __init__(self, task_name: str, producers: Mapping[str, SystemProducer]) -> None:
        self.task_name = task_name
        self.source = task_name
        self.producers = producers

    def _broadcast(self, stream: SystemStream, partitions: int, data: bytes) -> None:
        producer = self.producers[stream.system]
        for partition in range(partitions):
            producer.send(self.source, OutgoingMessageEnvelope(stream, data, None, None, partition))
        producer.flush(self.source)

    def send_end_of_stream(self, stream: SystemStream, partitions: int) -> None:
        self._broadcast(stream, partitions, encode_control_message(EndOfStreamMessage(self.task_name)))

    def send_watermark(self, stream: SystemStream, partitions: int, timestamp: int) -> None:
        data = encode_control_message(WatermarkMessage(int(timestamp), self.task_name))
        self._broadcast(stream, partitions, data)
