"""ConfluentSystemProducer: the Kafka system's producer on librdkafka (``kafka.client=confluent``).

librdkafka batches in C (``linger.ms``); ``send`` only hands a message over. Partitioning: an
envelope's ``partition`` outright; else the murmur2 hash of a ``partition_key`` that differs
from the key (``system/partitioner.py``, Kafka's DefaultPartitioner); else librdkafka's own
``murmur2_random`` partitioner on the key — the same hash, computed in C — or a random partition
for a message without a key.

Delivery is confirmed by callbacks, served on every ``flush`` and every few hundred sends; the
first failure is kept, names topic and partition, and is sticky as in Samza's
KafkaSystemProducer: every later send and flush raises it, so a commit (which flushes first)
never checkpoints past a lost message. ``flush`` waits until librdkafka has nothing in flight.

Statistics. With ``systems.<s>.producer.statistics.interval.ms`` set, librdkafka's totals
(messages sent, produce requests) are kept and reported by :meth:`metrics_snapshot` (the
container's summary shows them under ``producer-<system>``): messages per produce request is
how well ``linger.ms`` / ``batch.num.messages`` batch.

Transactions (``job.processing.guarantee=exactly-once``, container/exactly_once.py). The container
calls :meth:`init_transactions` once, before it sends anything; from then on everything sent — the
tasks' outputs, changelog writes, control messages and the checkpoints — belongs to the open
transaction, made readable to ``read_committed`` consumers by :meth:`commit_transaction` (after
which the next one begins) or discarded by :meth:`abort_transaction`. The transactional id
is the container's, so a restarted container fences the instance it replaces (the broker aborts
that instance's open transaction and refuses its writes: :class:`KafkaProducerFencedError`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

# this module loads only when a Kafka system runs on the confluent client (factory.py)
from confluent_kafka import KafkaError, KafkaException, Producer

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.model import OutgoingMessageEnvelope
from samza_dagster.system.errors import PartitionError, StreamNotFoundError
from samza_dagster.system.kafka.common import (
    no_transactions,
    not_bytes_error,
    transaction_error,
    transaction_timeout_ms,
)
from samza_dagster.system.kafka.confluent_config import ConfluentConfigs, config_error
from samza_dagster.system.kafka.connecting import first_metadata
from samza_dagster.system.kafka.errors import (
    KafkaProducerError,
    KafkaProducerFencedError,
    KafkaSendInterruptedError,
    KafkaTransactionAbortedError,
    KafkaTransactionError,
    unavailable,
)
from samza_dagster.system.kafka.retry import partition_counts_of_created
from samza_dagster.system.kafka.security import ConnectionFailures
from samza_dagster.system.partitioner import key_to_bytes, partition_for_key

#: serve delivery callbacks every this many sends (poll(0) costs a call into librdkafka)
SERVE_EVERY = 512
UNASSIGNED = -1


class ConfluentSystemProducer:
    #: ``flush`` waits for every source's messages (the container flushes once per commit)
    flush_covers_all_sources = True

    def __init__(self, system_name: str, config: Config, clients: ConfluentConfigs) -> None:
        self.system_name = system_name
        self._clients = clients
        self._producer: Any = None
        self._partitions: dict[str, int] = {}
        self._error: KafkaProducerError | None = None
        self._lock = threading.Lock()
        self._unserved = 0
        delivery_ms = clients.producer.get("delivery.timeout.ms") or clients.producer.get("message.timeout.ms", 120_000)
        self._flush_timeout_s = int(delivery_ms) / 1000 + 5
        self._statistics: dict[str, int] = {}
        self._flushes = 0
        self._commit_ms = keys.TASK_COMMIT_MS.get(config)
        #: set by init_transactions: every send is then part of the open transaction
        self._transactional_id: str | None = None
        #: librdkafka's reason, once it logged that the cluster aborted the open transaction (_AbortWatch)
        self._aborted: str | None = None
        #: whether the open transaction holds a message (a commit of an empty one is skipped)
        self._sent = False
        if int(clients.producer.get("statistics.interval.ms", 0) or 0) > 0:
            clients.producer["stats_cb"] = self._on_statistics
        self._failures = ConnectionFailures()
        clients.producer["error_cb"] = self._failures.record

    def register(self, source: str) -> None:
        pass

    def start(self) -> None:
        """Create the client and ask for the cluster's metadata once: an unreachable broker
        fails here, within bootstrap.timeout.ms, naming its address; refused credentials or an
        untrusted certificate fail as soon as librdkafka reports them, naming the cause. A
        failed start drops the client (librdkafka would keep reconnecting while it lives)."""
        try:
            first_metadata(
                self._client(),
                self._failures,
                self.system_name,
                self._clients.bootstrap_servers,
                self._clients.bootstrap_timeout_s,
                "producer start",
            )
        except BaseException:
            self._producer = None
            raise

    def _client(self, conf: dict[str, Any] | None = None) -> Any:
        if self._producer is None:
            with self._lock:
                if self._producer is None:
                    try:
                        self._producer = Producer(conf or self._clients.producer)
                    except KafkaException as exc:
                        raise config_error(exc, self._clients.producer_sources, "producer") or exc from None
        return self._producer

    # -- send ------------------------------------------------------------------------------
    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        if self._error is not None:
            raise self._error
        producer = self._producer or self._client()
        topic = envelope.system_stream.stream
        count = self._partitions.get(topic) or self._partition_count(topic)
        partition = envelope.partition
        if partition is None:
            hash_key = envelope.partition_key
            if hash_key is not None and hash_key is not envelope.key:
                partition = partition_for_key(hash_key if type(hash_key) is bytes else key_to_bytes(hash_key), count)
            else:
                partition = UNASSIGNED
        elif not 0 <= partition < count:
            raise PartitionError(
                f"Kafka system {self.system_name!r}: cannot send to topic {topic!r} partition "
                f"{partition}: the topic has {count} partitions"
            )
        key = envelope.key
        try:
            producer.produce(
                topic,
                envelope.message,
                key,
                partition=partition,
                on_delivery=self._on_delivery,
                timestamp=envelope.event_time or 0,
            )
        except BufferError:  # librdkafka's queue is full: let it deliver, then hand it over
            producer.poll(0.5)
            producer.produce(
                topic,
                envelope.message,
                key,
                partition=partition,
                on_delivery=self._on_delivery,
                timestamp=envelope.event_time or 0,
            )
        except TypeError as exc:
            raise not_bytes_error(self.system_name, topic, envelope, exc) from exc
        except KafkaException as exc:  # librdkafka's fatal state: e.g. a newer instance fenced this one
            raise self._client_error(f"send to topic {topic!r}", exc) from exc
        self._sent = True
        self._unserved += 1
        if self._unserved >= SERVE_EVERY:
            self._unserved = 0
            producer.poll(0)

    def _partition_count(self, topic: str) -> int:
        """Partition count of ``topic`` (one metadata request per topic; topics do not shrink).
        A topic that does not exist is a StreamNotFoundError here, at the first send (one this
        process created a moment ago is waited for: the broker asked may not know it yet)."""
        found: Any = None

        def lookup() -> dict[str, int]:
            nonlocal found
            try:
                metadata = self._producer.list_topics(topic, timeout=self._clients.bootstrap_timeout_s)
            except KafkaException as exc:
                raise unavailable(
                    self.system_name, self._clients.bootstrap_servers, exc, f"metadata of {topic!r}"
                ) from exc
            found = metadata.topics.get(topic)
            ok = found is not None and found.error is None
            return {topic: len(found.partitions)} if ok else {}

        count = partition_counts_of_created(
            f"Kafka system {self.system_name!r}: metadata of {topic!r}", lookup, {topic}
        )
        if not count.get(topic):
            raise StreamNotFoundError(self.system_name, topic, str(found.error) if found is not None else "")
        self._partitions[topic] = count[topic]
        return count[topic]

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and self._error is None:
            kind = (
                KafkaProducerFencedError
                if _is_fenced(error)
                else KafkaSendInterruptedError
                if _is_transient(error)
                else KafkaProducerError
            )
            self._error = kind(
                f"Kafka system {self.system_name!r}: send to topic {message.topic()!r} partition "
                f"{message.partition()} failed: {error.str()}"
            )

    def _on_statistics(self, raw: str) -> None:
        """librdkafka's statistics callback (served inside poll/flush)."""
        stats = json.loads(raw)
        requests = sum(int(b.get("req", {}).get("Produce", 0)) for b in stats.get("brokers", {}).values())
        self._statistics = {"txmsgs": int(stats.get("txmsgs", 0)), "produce_requests": requests}

    def metrics_snapshot(self) -> dict[str, Any]:
        """Flushes so far, and librdkafka's totals when statistics are on."""
        snapshot: dict[str, Any] = {"flushes": self._flushes}
        if self._statistics:
            snapshot["librdkafka"] = dict(self._statistics)
        return snapshot

    # -- flush / stop ----------------------------------------------------------------------
    def flush(self, source: str) -> None:
        """Wait until librdkafka has delivered (or failed) every message sent so far; raise the
        first failure. One librdkafka producer serves every source, as in Samza."""
        self._flushes += 1
        if self._producer is not None:
            try:
                left = self._flush_watching(self._producer)
            except KafkaException as exc:
                raise self._client_error("flush", exc) from exc
            if left:
                raise unavailable(
                    self.system_name,
                    self._clients.bootstrap_servers,
                    TimeoutError(f"{left} messages unacknowledged"),
                    f"flush after {self._flush_timeout_s:.0f} s",
                )
        if self._error is not None:
            raise self._error

    def _flush_watching(self, producer: Any) -> int:
        """``producer.flush`` up to the flush timeout, a second at a time, so that a transaction
        the cluster aborted meanwhile fails the flush at once (its sends still in flight would
        otherwise be waited for until they time out, minutes later)."""
        deadline = time.monotonic() + self._flush_timeout_s
        while True:
            left = producer.flush(max(0.0, min(FLUSH_SLICE_S, deadline - time.monotonic())))
            if not left or time.monotonic() >= deadline:
                return left
            if self._aborted is not None and self._error is None:
                self._error = KafkaTransactionAbortedError(
                    f"Kafka system {self.system_name!r}: the cluster aborted the transaction of "
                    f"{self._transactional_id!r} with {left} sends unacknowledged: {self._aborted}"
                )
                return 0

    def _note_aborted(self, cause: str) -> None:
        if self._aborted is None:
            self._aborted = cause

    def stop(self) -> None:
        if self._producer is None:
            return
        try:
            if self._transactional_id is not None:
                if self._sent and self._error is None:
                    self.abort_transaction()  # not committed: nobody may read it (the next commit would have)
            elif self._error is None:
                self.flush("stop")
        finally:
            self._producer = None

    # -- transactions (the container's exactly-once commit) ---------------------------------
    def init_transactions(self, transactional_id: str, state_stream: str) -> None:
        """Kafka's ``initTransactions``: write from now on in transactions under
        ``transactional_id``. The broker fences every older producer with that id and aborts the
        transaction it left open. librdkafka takes the id only when a client is created, so the
        client is replaced (the container calls this before it sends anything). The checkpoints
        (``state_stream``) are sent in each transaction like any other message; the parameter is
        the embedded log's, whose commit point lives in that stream's file."""
        if self._transactional_id is not None:
            raise KafkaTransactionError(
                f"Kafka system {self.system_name!r}: transactions already initialised ({self._transactional_id!r})"
            )
        if self._producer is not None:
            self.flush("init_transactions")
            self._producer = None
        conf = dict(self._clients.producer)
        conf["transactional.id"] = transactional_id
        delivery_ms = int(conf.get("delivery.timeout.ms") or conf.get("message.timeout.ms") or 0)
        conf.setdefault("transaction.timeout.ms", transaction_timeout_ms(self._commit_ms, delivery_ms))
        conf["logger"] = _AbortWatch(conf.get("logger"), self._note_aborted)
        producer = self._client(conf)
        self._transactional_id = transactional_id
        try:
            producer.init_transactions(self._flush_timeout_s)
            producer.begin_transaction()
        except KafkaException as exc:
            raise self._transaction_error("initialising transactions", exc) from exc
        self._sent = False

    @property
    def transactional(self) -> bool:
        return self._transactional_id is not None

    def has_open_transaction(self) -> bool:
        """Whether the open transaction holds a message."""
        return self._transactional_id is not None and self._sent

    def commit_transaction(self) -> None:
        """Deliver what was sent, then commit: the transaction's messages (on every topic) become
        readable to ``read_committed`` consumers together. The next transaction begins."""
        producer = self._require_transaction()
        if self._error is not None:  # a message of this transaction failed: it must be aborted
            raise self._error
        try:
            producer.commit_transaction(self._flush_timeout_s)
        except KafkaException as exc:
            raise self._transaction_error("commit", exc) from exc
        self._sent = False
        try:
            producer.begin_transaction()
        except KafkaException as exc:
            raise self._transaction_error("beginning the next transaction after a commit", exc) from exc

    def abort_transaction(self) -> None:
        """Discard what the open transaction wrote (``read_committed`` consumers never see it);
        the next transaction begins. A delivery failure that led here is cleared with it."""
        producer = self._require_transaction()
        try:
            producer.abort_transaction(self._flush_timeout_s)
            producer.begin_transaction()
        except KafkaException as exc:
            raise self._transaction_error("abort", exc) from exc
        self._sent = False
        self._error = None
        self._aborted = None

    def _require_transaction(self) -> Any:
        if self._transactional_id is None or self._producer is None:
            raise no_transactions(self.system_name)
        return self._producer

    def _client_error(self, what: str, exc: BaseException) -> KafkaProducerError:
        """What a librdkafka exception outside the transaction calls means (a fenced or otherwise
        failed transactional producer, or a fatal client error)."""
        if self._transactional_id is not None:
            return self._transaction_error(what, exc)
        return KafkaProducerError(f"Kafka system {self.system_name!r}: {what} failed: {exc}")

    def _transaction_error(self, what: str, exc: BaseException) -> KafkaTransactionError:
        error = exc.args[0] if exc.args else None
        if isinstance(error, KafkaError):
            fenced = _is_fenced(error)
            aborted = not fenced and not error.fatal() and (error.txn_requires_abort() or _is_transient(error))
            return transaction_error(self.system_name, self._transactional_id, what, error.str(), fenced, aborted)
        return transaction_error(self.system_name, self._transactional_id, what, str(exc), False)


#: how long one call of librdkafka's flush waits before the producer looks for an aborted transaction
FLUSH_SLICE_S = 1.0


class _AbortWatch:
    """librdkafka's logger for a transactional producer: passes every line on, and notes the one
    that says the cluster aborted the open transaction (``TXNERR`` "Current transaction failed",
    an abortable error: an out-of-order sequence after a broker restarted). librdkafka reports that
    state to the application only at the next commit or abort, and sends of the transaction still
    in flight would hold a flush until they time out; lines are served by poll/flush, on the
    container's thread."""

    def __init__(self, logger: Any, noted: Callable[[str], None]) -> None:
        self._logger = logger
        self._noted = noted

    def log(self, level: int, msg: str, *args: Any) -> None:
        if self._logger is not None:
            self._logger.log(level, msg, *args)
        if level >= logging.WARNING and args and args[0] == "TXNERR":
            text = str(args[-1])
            if "Current transaction failed" in text:
                self._noted(text.split("]: ", 1)[-1])


#: librdkafka's delivery errors of a cluster that could not take the messages for a while: a start
#: from the last checkpoint sends them again (a send's own fault — too large, not authorized — is not)
_TRANSIENT_CODES = frozenset(
    {
        KafkaError._MSG_TIMED_OUT,  # no broker acknowledged it within message.timeout.ms
        KafkaError._PURGE_QUEUE,  # dropped from the queue: the transaction became abortable
        KafkaError._PURGE_INFLIGHT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER,  # a broker restarted under the idempotent sequence
    }
)


def _is_transient(error: Any) -> bool:
    """Whether a librdkafka error is one a new start from the last commit clears."""
    return not error.fatal() and (error.retriable() or error.code() in _TRANSIENT_CODES)


def _is_fenced(error: Any) -> bool:
    """Whether a librdkafka error says a newer producer took over the transactional id."""
    return error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
