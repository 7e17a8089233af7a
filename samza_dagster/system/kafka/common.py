"""What the Kafka system's two clients (confluent, kafka-python) do the same way."""

from __future__ import annotations

from samza_dagster.model import OutgoingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.errors import MessageTypeError, OffsetError, SystemClientError
from samza_dagster.system.kafka.errors import (
    KafkaProducerFencedError,
    KafkaTransactionAbortedError,
    KafkaTransactionError,
)

#: Kafka's default ``transaction.timeout.ms``: the broker aborts a transaction open longer
TRANSACTION_TIMEOUT_MS = 60_000


def register_start_offset(
    start_offsets: dict[SystemStreamPartition, int],
    ssp: SystemStreamPartition,
    offset: str,
    system: str,
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


def transaction_timeout_ms(commit_ms: int, delivery_timeout_ms: int) -> int:
    """The default transaction timeout of an exactly-once job's producer: a transaction spans a
    commit interval, so it must outlast one (twice, for a slow commit); the clients also refuse
    a delivery timeout above it."""
    return max(TRANSACTION_TIMEOUT_MS, 2 * commit_ms, delivery_timeout_ms)


def transaction_error(
    system: str, transactional_id: str | None, what: str, detail: str, fenced: bool, aborted: bool = False
) -> KafkaTransactionError:
    """The error of a failed transaction call, naming the system and the transactional id;
    ``aborted``: the cluster aborted the transaction (Kafka's abortable errors), which a start
    from the last checkpoint clears (:class:`KafkaTransactionAbortedError`)."""
    if fenced:
        return KafkaProducerFencedError(
            f"Kafka system {system!r}: transactional producer {transactional_id!r} is fenced ({what}): a newer "
            f"instance of this container started with the same transactional id, and only it may write: {detail}"
        )
    if aborted:
        return KafkaTransactionAbortedError(
            f"Kafka system {system!r}: the cluster aborted the transaction of {transactional_id!r} ({what}): {detail}"
        )
    return KafkaTransactionError(
        f"Kafka system {system!r}: {what} of a transaction of {transactional_id!r} failed: {detail}"
    )


def no_transactions(system: str) -> KafkaTransactionError:
    return KafkaTransactionError(
        f"Kafka system {system!r}: no transactions (init_transactions was not called, or the producer stopped)"
    )
