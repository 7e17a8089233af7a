"""What the Kafka system's two clients (confluent, kafka-python) do the same way."""

from __future__ import annotations

from samza_dagster.model import OutgoingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.errors import MessageTypeError, OffsetError, SystemClientError


def register_start_offset(
    start_offsets: dict[SystemStreamPartition, int], ssp: SystemStreamPartition, offset: str, system: str,
    started: bool,
) -> None:
    """Record ``offset`` (the first message to read) for ``ssp``; registered twice, the earlier
    offset wins, as in Samza."""
    if started:
        raise SystemClientError(f"{ssp} registered after the Kafka consumer of {system!r} started")
    try:
        position = int(offset)
    except (TypeError, ValueError):
        raise OffsetError(f"{ssp}: offset {offset!r} is not a Kafka offset (an integer)") from None
    if position < 0:
        raise OffsetError(f"{ssp}: offset {offset!r} is negative")
    previous = start_offsets.get(ssp)
    start_offsets[ssp] = position if previous is None else min(previous, position)


def not_bytes_error(system: str, topic: str, envelope: OutgoingMessageEnvelope, cause: Exception) -> MessageTypeError:
    return MessageTypeError(
        f"Kafka system {system!r}, topic {topic!r}: key and message must be bytes (serialized by the "
        f"container's serdes), got key {type(envelope.key).__name__}, message {type(envelope.message).__name__}: {cause}"
    )
