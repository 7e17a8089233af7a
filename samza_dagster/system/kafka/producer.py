"""KafkaSystemProducer: batched sends through kafka-python, Kafka's default partitioning.

Partition of an envelope: ``partition`` outright; else the murmur2 hash of ``partition_key``
(or ``key``) as Kafka's DefaultPartitioner computes it (``system/partitioner.py``), passed to
kafka-python explicitly so keyed streams co-partition with Java clients and with the log
system; else kafka-python spreads the message (sticky partitioning).

Failures are tracked cheaply: every send's future gets one cached errback object per
topic-partition (no allocation per message) that records the *first* error; ``flush`` waits
for all acknowledgements and raises it, naming topic and partition. The error is sticky, as in
Samza's KafkaSystemProducer: a producer that lost a message refuses further sends.

Transactions (``job.processing.guarantee=exactly-once``): as the confluent producer's
(confluent_producer.py) — :meth:`KafkaSystemProducer.init_transactions` replaces the client by one
with the container's ``transactional_id``, and everything sent afterwards belongs to the open
transaction until :meth:`~KafkaSystemProducer.commit_transaction` or
:meth:`~KafkaSystemProducer.abort_transaction`.
"""

from __future__ import annotations

import threading
from typing import Any

from kafka.errors import KafkaError, KafkaTimeoutError, OutOfOrderSequenceNumberError, ProducerFencedError

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
from samza_dagster.system.kafka.config import KafkaClientConfigs
from samza_dagster.system.kafka.connecting import connect
from samza_dagster.system.kafka.coordinator_failover import survive_coordinator_loss
from samza_dagster.system.kafka.errors import (
    KafkaProducerError,
    KafkaProducerFencedError,
    KafkaSendInterruptedError,
    KafkaTransactionError,
    unavailable,
)
from samza_dagster.system.partitioner import key_to_bytes, partition_for_key


class _ErrorSink:
    """Errback of the sends to one topic-partition; records the producer's first failure."""

    __slots__ = ("producer", "topic", "partition")

    def __init__(self, producer: KafkaSystemProducer, topic: str, partition: int | None) -> None:
        self.producer = producer
        self.topic = topic
        self.partition = partition

    def __call__(self, exc: BaseException) -> None:
        producer = self.producer
        if producer._error is None:
            where = f"partition {self.partition}" if self.partition is not None else "a spread partition"
            fenced = isinstance(exc, ProducerFencedError)
            kind = (
                KafkaProducerFencedError
                if fenced
                else KafkaSendInterruptedError
                if _is_transient(exc)
                else KafkaProducerError
            )
            error = kind(
                f"Kafka system {producer.system_name!r}: send to topic {self.topic!r} {where} failed: "
                f"{type(exc).__name__}: {exc}"
                + (
                    f" (transactional producer {producer._transactional_id!r}: a newer instance of this container "
                    "started with the same transactional id)"
                    if fenced
                    else ""
                )
            )
            error.__cause__ = exc
            producer._error = error


class KafkaSystemProducer:
    #: ``flush`` waits for every source's messages (the container flushes once per commit)
    flush_covers_all_sources = True

    def __init__(self, system_name: str, config: Config, clients: KafkaClientConfigs) -> None:
        self.system_name = system_name
        self._clients = clients
        self._producer: Any = None
        self._sources: set[str] = set()
        self._partition_counts: dict[str, int] = {}
        self._sinks: dict[tuple[str, int | None], _ErrorSink] = {}
        self._tracked: set[str] = set()  # topics given to kafka-python's metadata (``_track``)
        self._error: KafkaProducerError | None = None
        self._lock = threading.Lock()  # guards client creation and the caches' misses only
        # kafka-python fails undeliverable batches after delivery_timeout_ms; flush waits that
        # long plus a margin before calling the rest unacknowledged.
        self._flush_timeout_s = clients.producer.get("delivery_timeout_ms", 120000) / 1000 + 5
        self._commit_ms = keys.TASK_COMMIT_MS.get(config)
        #: set by init_transactions: every send is then part of the open transaction
        self._transactional_id: str | None = None
        #: whether the open transaction holds a message
        self._sent = False

    def register(self, source: str) -> None:
        self._sources.add(source)

    def start(self) -> None:
        self._client()

    def _client(self, kwargs: dict[str, Any] | None = None) -> Any:
        producer = self._producer
        if producer is None:
            with self._lock:
                if self._producer is None:
                    # kafka-python loads only when a Kafka system uses it (kafka.client picks the client library)
                    from kafka import KafkaProducer

                    self._producer = connect(
                        self.system_name,
                        self._clients.bootstrap_servers,
                        "producer start",
                        lambda: KafkaProducer(**(kwargs or self._clients.producer)),
                        kwargs or self._clients.producer,
                    )
                producer = self._producer
        return producer

    # -- send ------------------------------------------------------------------------------
    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        if self._error is not None:
            raise self._error
        producer = self._producer or self._client()
        topic = envelope.system_stream.stream
        partition = envelope.partition
        if partition is None:
            hash_key = envelope.partition_key
            if hash_key is None:
                hash_key = envelope.key
            if hash_key is not None:
                count = self._partition_counts.get(topic) or self._partition_count(topic)
                partition = partition_for_key(hash_key if type(hash_key) is bytes else key_to_bytes(hash_key), count)
        sink = self._sinks.get((topic, partition)) or self._sink(topic, partition)
        try:
            future = producer.send(topic, envelope.message, envelope.key, None, partition, envelope.event_time)
        except TypeError as exc:
            raise not_bytes_error(self.system_name, topic, envelope, exc) from exc
        except KafkaTimeoutError as exc:  # no metadata for the topic within max.block.ms
            raise StreamNotFoundError(
                self.system_name,
                topic,
                f"no metadata within max.block.ms (missing topic or unreachable brokers): {exc}",
            ) from exc
        except KafkaError as exc:  # the client's error state, e.g. fenced by a newer instance
            if self._transactional_id is not None:
                raise self._transaction_error(f"send to topic {topic!r}", exc) from exc
            raise KafkaProducerError(
                f"Kafka system {self.system_name!r}: send to topic {topic!r} failed: {exc}"
            ) from exc
        except (AssertionError, ValueError) as exc:  # e.g. an explicit partition that does not exist
            raise PartitionError(
                f"Kafka system {self.system_name!r}: cannot send to topic {topic!r} partition {partition}: {exc}"
            ) from exc
        future.add_errback(sink)
        self._sent = True

    def _sink(self, topic: str, partition: int | None) -> _ErrorSink:
        """The errback of a topic-partition, made on its first send — which is also when the
        topic is put on kafka-python's list of tracked topics (``_track``)."""
        if topic not in self._tracked:
            self._tracked.add(topic)
            self._track(topic)
        sink = _ErrorSink(self, topic, partition)
        self._sinks[(topic, partition)] = sink
        return sink

    def _track(self, topic: str) -> None:
        """Make kafka-python keep ``topic``'s metadata. kafka-python 3.0 refreshes metadata only
        for the topics it tracks, and it tracks a topic only when a send finds no metadata for
        it. A broker that answers the bootstrap's empty topic list with every topic (the tests'
        broker does; Kafka answers with none) hands over metadata for topics that are then not
        tracked, and the first refresh for a topic created later (a changelog, an intermediate
        stream) replaces it all: the untracked topics' leaders become unknown and their
        buffered batches expire after ``delivery_timeout_ms`` (seen: a two-stage job's output
        batches expiring while ``flush`` waited). Tracking every topic on its first send costs
        one set lookup per new topic-partition and holds whatever the broker answers."""
        sender = getattr(self._producer, "_sender", None)
        if sender is not None and hasattr(sender, "add_topic"):
            sender.add_topic(topic)

    def _partition_count(self, topic: str) -> int:
        """Partition count of ``topic`` from kafka-python's metadata (cached: topics do not shrink)."""
        from kafka.errors import KafkaError

        try:
            partitions = self._producer.partitions_for(topic)
        except KafkaTimeoutError as exc:
            raise StreamNotFoundError(
                self.system_name,
                topic,
                f"no metadata within max.block.ms (missing topic or unreachable brokers): {exc}",
            ) from exc
        except KafkaError as exc:
            raise StreamNotFoundError(self.system_name, topic, str(exc)) from exc
        if not partitions:
            raise StreamNotFoundError(self.system_name, topic)
        count = len(partitions)
        self._partition_counts[topic] = count
        return count

    # -- flush / stop ----------------------------------------------------------------------
    def flush(self, source: str) -> None:
        """Wait until every message sent so far is acknowledged; raise the first failure.

        kafka-python flushes the whole producer, not one source: the same as Samza's
        KafkaSystemProducer, whose sources share one Kafka producer.
        """
        if self._producer is None:
            if self._error is not None:
                raise self._error
            return
        try:
            self._producer.flush(timeout=self._flush_timeout_s)
        except KafkaTimeoutError as exc:
            raise unavailable(
                self.system_name,
                self._clients.bootstrap_servers,
                exc,
                f"flush: messages unacknowledged after {self._flush_timeout_s:.0f}s",
            ) from exc
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        producer = self._producer
        if producer is None:
            return
        try:
            if self._transactional_id is not None:
                if self._sent and self._error is None:
                    self.abort_transaction()  # not committed: nobody may read it (the next commit would have)
            elif self._error is None:
                self.flush("stop")
        finally:
            self._producer = None
            producer.close(timeout=5)

    # -- transactions (the container's exactly-once commit) ---------------------------------
    def init_transactions(self, transactional_id: str, state_stream: str) -> None:
        """Kafka's ``initTransactions`` (see confluent_producer.py, the same contract): the client
        is replaced by one with ``transactional_id``, which fences every older producer with it
        and aborts the transaction it left open."""
        if self._transactional_id is not None:
            raise KafkaTransactionError(
                f"Kafka system {self.system_name!r}: transactions already initialised ({self._transactional_id!r})"
            )
        old = self._producer
        if old is not None:
            self.flush("init_transactions")
            self._producer = None
            old.close(timeout=5)
        kwargs = dict(self._clients.producer, transactional_id=transactional_id)
        kwargs.setdefault(
            "transaction_timeout_ms",
            transaction_timeout_ms(self._commit_ms, int(kwargs.get("delivery_timeout_ms", 0) or 0)),
        )
        self._transactional_id = transactional_id
        producer = self._client(kwargs)
        survive_coordinator_loss(producer)  # kafka-python 3.0.12 loses a request to a dead coordinator
        try:
            producer.init_transactions()
            producer.begin_transaction()
        except KafkaError as exc:
            raise self._transaction_error("initialising transactions", exc) from exc
        self._sent = False

    @property
    def transactional(self) -> bool:
        return self._transactional_id is not None

    def has_open_transaction(self) -> bool:
        """Whether the open transaction holds a message."""
        return self._transactional_id is not None and self._sent

    def commit_transaction(self) -> None:
        """Deliver what was sent, then commit; the next transaction begins."""
        producer = self._require_transaction()
        if self._error is not None:  # a message of this transaction failed: it must be aborted
            raise self._error
        try:
            self._end_transaction(producer, commit=True)
        except KafkaError as exc:
            raise self._transaction_error("commit", exc) from exc
        self._sent = False
        try:
            producer.begin_transaction()
        except KafkaError as exc:
            raise self._transaction_error("beginning the next transaction after a commit", exc) from exc

    def abort_transaction(self) -> None:
        """Discard what the open transaction wrote; the next transaction begins."""
        producer = self._require_transaction()
        try:
            self._end_transaction(producer, commit=False)
            producer.begin_transaction()
        except KafkaError as exc:
            raise self._transaction_error("abort", exc) from exc
        self._sent = False
        self._error = None

    def _end_transaction(self, producer: Any, commit: bool) -> None:
        """kafka-python's ``commit_transaction``/``abort_transaction``, bounded by the flush
        timeout: kafka-python waits for the EndTxn answer without one, so a broker that never
        answers (the tests' broker closes the connection on a fenced producer's EndTxn) would
        hang the container. The same three steps, through its transaction manager (guarded:
        without those internals, the unbounded public call)."""
        manager = getattr(producer, "_transaction_manager", None)
        sender = getattr(producer, "_sender", None)
        if manager is None or sender is None or not hasattr(manager, "begin_commit"):
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            return
        result = manager.begin_commit() if commit else manager.begin_abort()
        sender.wakeup()
        if not result.wait(timeout_ms=self._flush_timeout_s * 1000):
            raise KafkaTimeoutError(f"no answer to EndTxn within {self._flush_timeout_s:.0f} s")

    def _require_transaction(self) -> Any:
        if self._transactional_id is None or self._producer is None:
            raise no_transactions(self.system_name)
        return self._producer

    def _transaction_error(self, what: str, exc: BaseException) -> KafkaTransactionError:
        # kafka-python raises its error state as a plain KafkaError naming the cause
        fenced = isinstance(exc, ProducerFencedError) or "ProducerFencedError" in str(exc)
        manager = getattr(self._producer, "_transaction_manager", None)
        abortable = manager is not None and getattr(manager, "has_abortable_error", lambda: False)()
        aborted = not fenced and (abortable or _is_transient(exc))
        return transaction_error(
            self.system_name, self._transactional_id, what, f"{type(exc).__name__}: {exc}", fenced, aborted
        )


def _is_transient(exc: BaseException) -> bool:
    """Whether kafka-python's error is one a new start from the last commit clears: a retriable
    error it gave up on (no leader, not enough replicas, a request timed out), a send that timed
    out, or a sequence a restarted broker did not expect."""
    return bool(getattr(exc, "retriable", False)) or isinstance(exc, (KafkaTimeoutError, OutOfOrderSequenceNumberError))
