"""A kafka-python (3.0.12) transactional producer outlives the death of its transaction coordinator.

The bug. kafka-python's Sender sends a transactional request (AddPartitionsToTxn, EndTxn ...) to
the transaction coordinator after ``client.await_ready(coordinator)``. Written for an
``await_ready`` that answers False, it then looks the coordinator up again and re-queues the
request; but ``await_ready`` *raises* (``KafkaConnectionError: Node coordinator-N not ready``), and
the ``except`` branch looks the coordinator up without re-queuing the request, because the
coordinator's node was already chosen. The request is lost: a partition new to the transaction is
never added to it, its batches are never sent (the Sender spins, asking nothing), and they expire
after ``delivery.timeout.ms`` (120 s) — an exactly-once job whose coordinator's broker died fails
two minutes later instead of going on once Kafka elected a new coordinator (about 11 s). Seen in
``tests/reliability/test_reliability_kafka_failover.py``; librdkafka has no such problem.

The fix: the Sender's client answers ``await_ready`` as the Sender expects — False for a node
that is not ready, after the client's retry back-off (what the Java client waits before asking
again) — so the request is looked up again and re-queued. Only this producer's Sender sees the
change; a kafka-python without these internals is left as it is.
"""

from __future__ import annotations

import time
from typing import Any


class _ReadyOrNot:
    """kafka-python's client as the Sender sees it, with ``await_ready`` answering False for a
    node that cannot be reached instead of raising; everything else is the client's."""

    def __init__(self, client: Any, backoff_s: float) -> None:
        self._client = client
        self._backoff_s = backoff_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def await_ready(self, node_id: Any, timeout_ms: int = 30_000) -> bool:
        from kafka.errors import KafkaConnectionError

        try:
            return bool(self._client.await_ready(node_id, timeout_ms=timeout_ms))
        except KafkaConnectionError:
            time.sleep(self._backoff_s)  # then the coordinator is looked up again
            return False


def survive_coordinator_loss(producer: Any) -> None:
    """Give ``producer``'s Sender a client whose ``await_ready`` answers False (module docstring)."""
    sender: Any = getattr(producer, "_sender", None)
    client = getattr(sender, "_client", None)
    if sender is None or client is None or isinstance(client, _ReadyOrNot) or not hasattr(client, "await_ready"):
        return
    backoff_ms = getattr(sender, "config", {}).get("retry_backoff_ms", 100)
    sender._client = _ReadyOrNot(client, backoff_ms / 1000)
