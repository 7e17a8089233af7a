"""KafkaSystemConsumer: reads the partitions the job model assigned, from given offsets.

No consumer group and no rebalancing: partitions come from the job model, positions from
Samza's checkpoints (``assign`` + ``seek``; auto commit off). ``poll`` may run on another
thread than ``register``/``start`` (SystemConsumers polls each system on its own thread); a
lock per *poll call* (never per message) keeps ``stop`` from closing the client mid-poll.

Only the SSPs asked for are fetched: the others are paused in kafka-python, which then neither
fetches nor returns them, and their positions stay where they were. The pause set is only
recomputed when the requested set changes.

Bounded streams (``streams.<id>.samza.bounded``): each registered partition's upcoming offset
is captured at ``start()``; after the message before it, one end-of-stream envelope follows
and the partition is paused for good (immediately for a partition already at its end).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.errors import StreamNotFoundError, SystemClientError
from samza_dagster.system.kafka.common import register_start_offset
from samza_dagster.system.kafka.config import KafkaClientConfigs
from samza_dagster.system.kafka.connecting import connect
from samza_dagster.system.kafka.errors import unavailable
from samza_dagster.system.kafka.retry import partition_counts_of_created


class KafkaSystemConsumer:
    def __init__(self, system_name: str, config: Config, clients: KafkaClientConfigs) -> None:
        self.system_name = system_name
        self._clients = clients
        self._stream_config = StreamConfig(config)
        self._start_offsets: dict[SystemStreamPartition, int] = {}
        self._consumer: Any = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._tp_to_ssp: dict[Any, SystemStreamPartition] = {}
        self._ssp_to_tp: dict[SystemStreamPartition, Any] = {}
        #: Bounded partitions still being read → their upcoming offset captured at start().
        self._ends: dict[Any, int] = {}
        #: Bounded partitions whose end-of-stream envelope is due but not yet handed out.
        self._pending_eos: set[SystemStreamPartition] = set()
        #: Partitions that will never be fetched again (bounded and at their end).
        self._finished: set[Any] = set()
        self._active: set[Any] = set()
        self._last_requested: frozenset[SystemStreamPartition] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        """Read ``ssp`` from ``offset`` (the first message to read); the earlier offset wins."""
        register_start_offset(self._start_offsets, ssp, offset, self.system_name, self._consumer is not None)

    def start(self) -> None:
        # kafka-python loads only when a Kafka system uses it (kafka.client picks the client library)
        from kafka import KafkaConsumer, TopicPartition

        self._consumer = connect(
            self.system_name,
            self._clients.bootstrap_servers,
            "consumer start",
            lambda: KafkaConsumer(**self._clients.consumer),
            self._clients.consumer,
        )
        consumer = self._consumer
        try:
            topics = {ssp.stream for ssp in self._start_offsets}
            counts = partition_counts_of_created(
                f"Kafka system {self.system_name!r}: consumer start",
                # the first unknown topic refreshes metadata for all topics at once
                lambda: {t: len(consumer.partitions_for_topic(t) or ()) for t in topics},
                topics,
            )
            for ssp in self._start_offsets:
                if counts[ssp.stream] == 0:
                    raise StreamNotFoundError(self.system_name, ssp.stream, f"cannot read {ssp}")
                if ssp.partition >= counts[ssp.stream]:
                    raise StreamNotFoundError(
                        self.system_name,
                        ssp.stream,
                        f"{ssp} does not exist: the topic has {counts[ssp.stream]} partitions",
                    )
                tp = TopicPartition(ssp.stream, ssp.partition)
                self._tp_to_ssp[tp] = ssp
                self._ssp_to_tp[ssp] = tp

            consumer.assign(list(self._tp_to_ssp))
            for ssp, position in self._start_offsets.items():
                consumer.seek(self._ssp_to_tp[ssp], position)
            self._active = set(self._tp_to_ssp)
            self._capture_bounded_ends()
        except StreamNotFoundError:
            self._close()
            raise
        except Exception as exc:
            from kafka.errors import KafkaConnectionError, KafkaTimeoutError

            self._close()
            if isinstance(exc, (KafkaTimeoutError, KafkaConnectionError)):
                raise unavailable(self.system_name, self._clients.bootstrap_servers, exc, "consumer start") from exc
            raise

    def _capture_bounded_ends(self) -> None:
        bounded = [tp for tp, ssp in self._tp_to_ssp.items() if self._stream_config.is_bounded(ssp.system_stream)]
        if not bounded:
            return
        ends = self._consumer.end_offsets(bounded)  # one ListOffsets request per leader
        for tp in bounded:
            end = ends[tp]
            ssp = self._tp_to_ssp[tp]
            if self._start_offsets[ssp] >= end:
                self._finish(tp, ssp)
            else:
                self._ends[tp] = end

    def _finish(self, tp: Any, ssp: SystemStreamPartition) -> None:
        """Mark a bounded partition ended: its end-of-stream is due, it is never fetched again."""
        self._ends.pop(tp, None)
        self._finished.add(tp)
        self._pending_eos.add(ssp)
        if tp in self._active:
            self._active.discard(tp)
            self._consumer.pause(tp)
        self._last_requested = None  # recompute the pause set on the next poll

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close(autocommit=False)
            finally:
                self._consumer = None

    def position(self, ssp: SystemStreamPartition) -> str | None:
        """Kafka's fetch position of ``ssp``: the offset of the next message this consumer can
        return. It can be past the last message returned: offsets that carry no message
        (transaction commit/abort markers, records removed by compaction) are skipped. A batch
        reader uses it to see that it reached its end offset although no message holds
        ``end - 1``. None before start() or for an SSP not registered."""
        with self._lock:
            consumer = self._consumer
            tp = self._ssp_to_tp.get(ssp)
            if consumer is None or tp is None:
                return None
            return str(consumer.position(tp))

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
            if requested != self._last_requested:
                self._set_active(requested)
            if self._active:
                _release_parked_records(consumer)
                records = consumer.poll(timeout_ms=int(timeout_s * 1000))
                out = self._envelopes(records) if records else {}
                if self._ends:
                    self._end_past_markers(consumer, records, out)
                return out
        # Nothing to fetch: block the poller thread without spinning (stop() wakes it).
        self._stopped.wait(timeout_s)
        return {}

    def _set_active(self, requested: frozenset[SystemStreamPartition]) -> None:
        """Pause every assigned partition not requested (or finished), resume the others."""
        ssp_to_tp = self._ssp_to_tp
        want = {ssp_to_tp[ssp] for ssp in requested if ssp in ssp_to_tp} - self._finished
        to_pause = self._active - want
        to_resume = want - self._active
        if to_pause:
            self._consumer.pause(*to_pause)
        if to_resume:
            self._consumer.resume(*to_resume)
        self._active = want
        self._last_requested = requested

    def _end_past_markers(self, consumer: Any, records: dict, out: dict) -> None:
        """End a bounded partition whose fetch position reached its end offset although no
        message carried ``end - 1``: a transactional producer's commit marker (or a record
        removed by compaction) holds that offset, and no consumer ever receives it. Checked only
        for partitions that returned nothing this poll; ``position`` is local, no request."""
        for tp, end in list(self._ends.items()):
            if tp in records or tp not in self._active:
                continue
            if consumer.position(tp) >= end:
                ssp = self._tp_to_ssp[tp]
                self._finish(tp, ssp)
                self._pending_eos.discard(ssp)
                out.setdefault(ssp, []).append(IncomingMessageEnvelope.end_of_stream(ssp))

    def _envelopes(self, records: dict) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        out: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = {}
        ends = self._ends
        envelope = IncomingMessageEnvelope
        for tp, batch in records.items():
            ssp = self._tp_to_ssp[tp]
            end = ends.get(tp) if ends else None
            if end is not None and batch[-1].offset >= end - 1:
                batch = [r for r in batch if r.offset < end]
                self._finish(tp, ssp)
                self._pending_eos.discard(ssp)
                envelopes = _convert(envelope, ssp, batch)
                envelopes.append(envelope.end_of_stream(ssp))
                out[ssp] = envelopes
            else:
                out[ssp] = _convert(envelope, ssp, batch)
        return out


def _release_parked_records(consumer: Any) -> None:
    """Work around a kafka-python (3.0.12) fetcher bug that stalls a resumed partition forever.

    Records fetched for a partition that is then paused are parked (KAFKA-7548, kafka-python
    PR #2981) and the partition is not fetched again until they are restored; ``fetched_records``
    restores them only when its in-line slot ``_next_partition_records`` is ``None``. But the slot
    keeps the last partition's records once they are drained (an exhausted, falsy object), so
    after any other partition was read the parked partition is never restored nor fetched:
    backpressure (a full buffer leaves its partition out of ``poll``) would stop that input for
    good. An exhausted slot means the same as an empty one to kafka-python, so empty it.
    Once per poll, not per message; a no-op on kafka-python versions without these attributes.
    """
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is not None and getattr(fetcher, "_paused_partition_records", None):
        current = getattr(fetcher, "_next_partition_records", None)
        if current is not None and not current:
            fetcher._next_partition_records = None


def _convert(envelope: type[IncomingMessageEnvelope], ssp: SystemStreamPartition, batch: list) -> list:
    """ConsumerRecords → envelopes. kafka-python reports -1 sizes for null keys/values and
    timestamp -1 when a record has none."""
    return [
        envelope(
            ssp,
            str(r.offset),
            r.key,
            r.value,
            (r.serialized_key_size if r.serialized_key_size > 0 else 0)
            + (r.serialized_value_size if r.serialized_value_size > 0 else 0),
            r.timestamp if r.timestamp >= 0 else None,
        )
        for r in batch
    ]
