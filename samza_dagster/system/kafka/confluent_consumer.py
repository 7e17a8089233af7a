"""ConfluentSystemConsumer: the Kafka system's consumer on librdkafka (``kafka.client=confluent``).

The same contract as the kafka-python consumer (:mod:`.consumer`): partitions come from the job
model (``assign`` with the start offsets; no group join, no commits), a poll returns only the
SSPs asked for, a bounded partition ends with one end-of-stream envelope at the upcoming offset
captured at ``start()``, and a lock per *poll call* keeps ``stop`` from closing the client
mid-poll. Fetching is librdkafka's, in C, in the background; a poll takes up to
``systems.<s>.consumer.fetch.batch.messages`` (500) messages at once with ``consume()`` and builds
an envelope per message with nothing else per message.

Back-pressure that keeps what was fetched. SystemConsumers leaves a partition out of a poll
while its buffer is full, usually for a few milliseconds. Pausing it in librdkafka would purge its
prefetched messages, to be fetched again on resume behind librdkafka's fetch back-off: a broker
that answers a fetch with one partition's run of tens of thousands of messages made that a
refetch of most of them, every time (B2 at 1M messages: 8.9M messages fetched, half the wall time
idle). Instead, messages of a partition not asked for are *parked* here and handed out first when
it is asked for again. While the parked messages of all partitions together exceed
``systems.<s>.consumer.park.max.bytes`` (:data:`DEFAULT_PARK_MAX_BYTES`, several fetch
responses), nothing more is taken from librdkafka: its queue fills to its own bounds
(``queued.min.messages``, ``queued.max.messages.kbytes``) and it stops fetching by itself, which
discards nothing. Only when that lasts :data:`PAUSE_AFTER_S` without any parked partition being
asked for — the job needs messages queued behind them, e.g. a bootstrap stream's — are the
partitions holding parked messages paused in librdkafka (each until its parked messages are
taken) so the others' messages flow. Memory is bounded by librdkafka's queue bound plus this cap
plus SystemConsumers' buffers.

Statistics. With ``systems.<s>.consumer.statistics.interval.ms`` set, librdkafka's statistics
are kept (messages and bytes fetched) and reported with the parking counters by
:meth:`ConfluentSystemConsumer.metrics_snapshot` (the container's summary shows them under
``consumer-<system>``): fetched messages well above consumed ones mean refetching.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.errors import SamzaSystemError, StreamNotFoundError, SystemClientError
from samza_dagster.system.kafka.common import register_start_offset
from samza_dagster.system.kafka.confluent_config import ConfluentConfigs, config_error
from samza_dagster.system.kafka.connecting import first_metadata
from samza_dagster.system.kafka.retry import partition_counts_of_created
from samza_dagster.system.kafka.security import ConnectionFailures

BATCH_KEY = keys.SYSTEM_CONSUMER_FETCH_BATCH.name.split(".consumer.", 1)[1]  # within systems.<s>.consumer.
DEFAULT_BATCH: int = keys.SYSTEM_CONSUMER_FETCH_BATCH.default
#: the engine's key (not librdkafka's): parked bytes of all partitions above which the
#: partitions holding them are paused in librdkafka
PARK_MAX_BYTES_KEY = keys.SYSTEM_CONSUMER_PARK_MAX_BYTES.name.split(".consumer.", 1)[1]
#: 32 MiB: six of the test broker's 5 MiB fetch responses, eight of a 4-partition fetch from a
#: Kafka broker (max.partition.fetch.bytes 1 MiB each)
DEFAULT_PARK_MAX_BYTES: int = keys.SYSTEM_CONSUMER_PARK_MAX_BYTES.default
#: what an envelope costs beyond its key and value (the envelope, its offset string, two bytes
#: objects' headers; measured with tracemalloc), counted against park.max.bytes
ENVELOPE_OVERHEAD_BYTES = 250
#: how long the parked messages may stay over park.max.bytes, none of their partitions asked for,
#: before those partitions are paused (their queued messages are then dropped and fetched again).
#: Longer than a commit takes (the run loop drains no buffer while it flushes stores and
#: producers): at 0.5 s, B2 on a loaded machine paused twice per run, at commits.
PAUSE_AFTER_S = 5.0


class ConfluentSystemConsumer:
    def __init__(self, system_name: str, config: Config, clients: ConfluentConfigs) -> None:
        self.system_name = system_name
        self._clients = clients
        self._stream_config = StreamConfig(config)
        conf = dict(clients.consumer)
        self._batch = _positive_int(conf.pop(BATCH_KEY, DEFAULT_BATCH), clients.consumer_sources.pop(BATCH_KEY, None))
        self._park_max_bytes = _positive_int(
            conf.pop(PARK_MAX_BYTES_KEY, DEFAULT_PARK_MAX_BYTES), clients.consumer_sources.pop(PARK_MAX_BYTES_KEY, None)
        )
        if int(conf.get("statistics.interval.ms", 0) or 0) > 0:
            conf["stats_cb"] = self._on_statistics
        self._failures = ConnectionFailures()
        conf["error_cb"] = self._failures.record
        self._conf = conf
        self._start_offsets: dict[SystemStreamPartition, int] = {}
        self._consumer: Any = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        #: (topic, partition) → SSP, and SSP → a TopicPartition (for pause/resume/position)
        self._ssps: dict[tuple[str, int], SystemStreamPartition] = {}
        self._tps: dict[SystemStreamPartition, Any] = {}
        #: bounded partitions still being read → their upcoming offset captured at start()
        self._ends: dict[SystemStreamPartition, int] = {}
        self._pending_eos: set[SystemStreamPartition] = set()
        self._finished: set[SystemStreamPartition] = set()
        #: partitions librdkafka fetches (assigned, not finished, not paused for parking)
        self._active: set[SystemStreamPartition] = set()
        #: messages fetched for partitions no poll asked for yet: per partition the fetched
        #: batches in offset order, each with its bytes; handed out about a poll batch at a time
        self._parked: dict[SystemStreamPartition, deque[tuple[list[IncomingMessageEnvelope], int]]] = {}
        self._parked_total = 0
        #: partitions paused because parked bytes passed park.max.bytes (resumed when taken)
        self._paused_for_parking: set[SystemStreamPartition] = set()
        self._pauses = 0
        self._parked_peak = 0
        #: since when the parked bytes are over the cap with no parked partition asked for
        self._over_cap_since: float | None = None
        #: librdkafka's statistics (when statistics.interval.ms is set): totals kept
        self._statistics: dict[str, int] = {}

    # -- lifecycle -------------------------------------------------------------------------
    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        """Read ``ssp`` from ``offset`` (the first message to read); the earlier offset wins."""
        register_start_offset(self._start_offsets, ssp, offset, self.system_name, self._consumer is not None)

    def start(self) -> None:
        # confluent-kafka loads only when a Kafka system uses it (kafka.client picks the client library)
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        try:
            self._consumer = Consumer(self._conf)
        except KafkaException as exc:
            raise config_error(exc, self._clients.consumer_sources, "consumer") or exc from None
        try:
            counts = self._partition_counts({ssp.stream for ssp in self._start_offsets})
            for ssp in self._start_offsets:
                count = counts.get(ssp.stream, 0)
                if count == 0:
                    raise StreamNotFoundError(self.system_name, ssp.stream, f"cannot read {ssp}")
                if ssp.partition >= count:
                    raise StreamNotFoundError(
                        self.system_name, ssp.stream, f"{ssp} does not exist: the topic has {count} partitions"
                    )
                self._ssps[(ssp.stream, ssp.partition)] = ssp
                self._tps[ssp] = TopicPartition(ssp.stream, ssp.partition)
            self._consumer.assign([TopicPartition(s.stream, s.partition, o) for s, o in self._start_offsets.items()])
            self._active = set(self._start_offsets)
            self._capture_bounded_ends()
        except BaseException:
            self._close()
            raise

    def _partition_counts(self, topics: set[str]) -> dict[str, int]:
        """Partition count of each topic, from one metadata request (all topics); a topic this
        process created a moment ago is waited for (the broker asked may not know it yet)."""

        def lookup() -> dict[str, int]:
            metadata = first_metadata(
                self._consumer,
                self._failures,
                self.system_name,
                self._clients.bootstrap_servers,
                self._clients.bootstrap_timeout_s,
                "consumer start",
            )
            return {
                t: len(metadata.topics[t].partitions)
                for t in topics
                if t in metadata.topics and metadata.topics[t].error is None
            }

        return partition_counts_of_created(f"Kafka system {self.system_name!r}: consumer start", lookup, topics)

    def _capture_bounded_ends(self) -> None:
        for ssp in self._start_offsets:
            if not self._stream_config.is_bounded(ssp.system_stream):
                continue
            _, high = self._consumer.get_watermark_offsets(
                self._tps[ssp], timeout=self._clients.bootstrap_timeout_s, cached=False
            )
            if self._start_offsets[ssp] >= high:
                self._finish(ssp)
            else:
                self._ends[ssp] = high

    def _finish(self, ssp: SystemStreamPartition) -> None:
        """A bounded partition ended: its end-of-stream is due, it is never fetched again."""
        self._ends.pop(ssp, None)
        self._finished.add(ssp)
        self._pending_eos.add(ssp)
        if ssp in self._active:
            self._active.discard(ssp)
            self._consumer.pause([self._tps[ssp]])

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close()
            finally:
                self._consumer = None

    def position(self, ssp: SystemStreamPartition) -> str | None:
        """The fetch position of ``ssp`` (the next offset it can return; past offsets that hold
        no message, such as transaction markers). None before start() or for an unknown SSP."""
        with self._lock:
            if self._consumer is None or ssp not in self._tps:
                return None
            (tp,) = self._consumer.position([self._tps[ssp]])
            return str(tp.offset) if tp.offset >= 0 else str(self._start_offsets[ssp])

    # -- poll ------------------------------------------------------------------------------
    def poll(
        self, ssps: Iterable[SystemStreamPartition], timeout_s: float
    ) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        requested = ssps if isinstance(ssps, frozenset) else frozenset(ssps)
        with self._lock:
            consumer = self._consumer
            if consumer is None:
                if self._stopped.is_set():
                    return {}
                raise SystemClientError(f"poll before start() on the Kafka consumer of {self.system_name!r}")
            if self._pending_eos:
                due = self._pending_eos & requested
                if due:
                    self._pending_eos -= due
                    return {ssp: [IncomingMessageEnvelope.end_of_stream(ssp)] for ssp in due}
            out = self._take_parked(requested)
            if out:
                return out
            if self._parked_total > self._park_max_bytes and self._holding_back():
                consumer = None  # leave librdkafka's queue alone: it stops fetching when full
            elif self._active:
                messages = self._consume(consumer, timeout_s)
                fetched = self._envelopes(messages) if messages else {}
                if self._ends:
                    self._end_past_markers(fetched)
                return self._hand_out(fetched, requested)
        self._stopped.wait(timeout_s)
        return {}

    def _holding_back(self) -> bool:
        """Over park.max.bytes: True while librdkafka's queue is left alone, for at most
        PAUSE_AFTER_S; then the parked partitions are paused and the others read (module
        docstring). False when every parked partition is paused already."""
        if not any(ssp in self._active for ssp in self._parked):
            return False
        now = time.monotonic()
        if self._over_cap_since is None:
            self._over_cap_since = now
            return True
        if now - self._over_cap_since < PAUSE_AFTER_S:
            return True
        self._over_cap_since = None
        self._pause_parked()
        return False

    def _consume(self, consumer: Any, timeout_s: float) -> list:
        """What librdkafka holds now, up to a batch; when it holds nothing, wait up to
        ``timeout_s`` for the first message. (``consume(n, timeout)`` itself waits until it has
        n messages or the timeout passed — a poll would idle its whole timeout whenever fewer
        than a batch were fetched.)"""
        messages = consumer.consume(self._batch, 0)
        if messages:
            return messages
        messages = consumer.consume(1, timeout_s)
        if messages and self._batch > 1:
            messages.extend(consumer.consume(self._batch - 1, 0))
        return messages

    def _take_parked(self, requested: frozenset[SystemStreamPartition]) -> dict:
        """Parked envelopes of the requested partitions, about a poll batch each: handing over
        all of them at once would hide the backlog in SystemConsumers' buffers, past its bounds."""
        out = {}
        if self._parked:
            batch = self._batch
            for ssp in requested & self._parked.keys():
                self._over_cap_since = None  # a parked partition was asked for: the job is moving
                queue = self._parked[ssp]
                envelopes, size = queue.popleft()
                while queue and len(envelopes) < batch:
                    more, more_size = queue.popleft()
                    envelopes = envelopes + more
                    size += more_size
                self._parked_total -= size
                out[ssp] = envelopes
                if queue:
                    continue
                del self._parked[ssp]
                if ssp in self._paused_for_parking:
                    self._paused_for_parking.discard(ssp)
                    if ssp not in self._finished:
                        self._active.add(ssp)
                        self._consumer.resume([self._tps[ssp]])
        return out

    def _hand_out(self, fetched: dict, requested: frozenset[SystemStreamPartition]) -> dict:
        """The fetched envelopes of the partitions asked for; the others are parked."""
        out = {}
        parked = self._parked
        for ssp, envelopes in fetched.items():
            if ssp in requested and ssp not in parked:
                out[ssp] = envelopes
                continue
            size = ENVELOPE_OVERHEAD_BYTES * len(envelopes) + sum([e.size for e in envelopes])
            queue = parked.get(ssp)
            if queue is None:
                queue = parked[ssp] = deque()
            queue.append((envelopes, size))
            self._parked_total += size
        if self._parked_total > self._parked_peak:
            self._parked_peak = self._parked_total
        return out

    def _pause_parked(self) -> None:
        to_pause = [ssp for ssp in self._parked if ssp in self._active]
        if to_pause:
            self._active.difference_update(to_pause)
            self._paused_for_parking.update(to_pause)
            self._pauses += len(to_pause)
            self._consumer.pause([self._tps[ssp] for ssp in to_pause])

    # -- statistics ------------------------------------------------------------------------
    def _on_statistics(self, raw: str) -> None:
        """librdkafka's statistics callback (served inside consume(), on the poller thread)."""
        stats = json.loads(raw)
        self._statistics = {"rxmsgs": int(stats.get("rxmsgs", 0)), "rxmsg_bytes": int(stats.get("rxmsg_bytes", 0))}

    def metrics_snapshot(self) -> dict[str, Any]:
        """Parking counters, and librdkafka's fetch totals when statistics are on: messages
        fetched (``rxmsgs``, refetches included) and their bytes."""
        snapshot: dict[str, Any] = {
            "parked_bytes": self._parked_total,
            "parked_bytes_peak": self._parked_peak,
            "pauses_for_parking": self._pauses,
        }
        if self._statistics:
            snapshot["librdkafka"] = dict(self._statistics)
        return snapshot

    def _envelopes(self, messages: list) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        out: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = {}
        ssps = self._ssps
        envelope = IncomingMessageEnvelope
        last_key: tuple[str, int] | None = None
        batch: list[IncomingMessageEnvelope] = []
        for m in messages:
            error = m.error()
            if error is not None:
                self._on_error(error, m)
                continue
            key = (m.topic(), m.partition())
            if key != last_key:
                ssp = ssps[key]
                batch = out.setdefault(ssp, [])
                last_key = key
            k, v = m.key(), m.value()
            kind, ts = m.timestamp()
            batch.append(
                envelope(ssp, str(m.offset()), k, v, (len(k) if k else 0) + (len(v) if v else 0), ts if kind else None)
            )
        if self._ends:
            self._cut_at_ends(out)
        return out

    def _cut_at_ends(self, out: dict[SystemStreamPartition, list[IncomingMessageEnvelope]]) -> None:
        for ssp, envelopes in out.items():
            end = self._ends.get(ssp)
            if end is not None and int(envelopes[-1].offset) >= end - 1:
                envelopes[:] = [e for e in envelopes if int(e.offset) < end]
                self._finish(ssp)
                self._pending_eos.discard(ssp)
                envelopes.append(IncomingMessageEnvelope.end_of_stream(ssp))

    def _end_past_markers(self, out: dict) -> None:
        """End a bounded partition whose position reached its end although no message held
        ``end - 1`` (a transaction marker or a compacted record does)."""
        idle = [ssp for ssp in self._ends if ssp not in out and ssp in self._active]
        if not idle:
            return
        for tp in self._consumer.position([self._tps[s] for s in idle]):
            ssp = self._ssps[(tp.topic, tp.partition)]
            if tp.offset >= 0 and tp.offset >= self._ends.get(ssp, tp.offset + 1):
                self._finish(ssp)
                self._pending_eos.discard(ssp)
                out.setdefault(ssp, []).append(IncomingMessageEnvelope.end_of_stream(ssp))

    def _on_error(self, error: Any, message: Any) -> None:
        """librdkafka reports transient trouble (a broker down, a rebalance of leaders) as
        messages with an error and retries by itself; only a fatal one fails the job."""
        from confluent_kafka import KafkaError

        if error.code() == KafkaError._PARTITION_EOF or error.retriable() or not error.fatal():
            return
        raise SamzaSystemError(
            f"Kafka system {self.system_name!r}: fetching topic {message.topic()!r} partition "
            f"{message.partition()} failed: {error.str()}"
        )


def _positive_int(value: Any, key: str | None) -> int:
    """An engine setting among the consumer keys (librdkafka never sees it)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1:
        name = key or "systems.*.consumer.*"
        raise ConfigError(f"config key {name!r} must be a positive integer, got {value!r}", key=name)
    return number
