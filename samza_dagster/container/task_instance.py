"""TaskInstance: one task object plus everything the run loop needs to drive it —
lazy per-envelope deserialization, offsets processed, end-of-stream state, its collector,
coordinator, stores and metrics.

Deserialization happens here, not in the consumer, so a bad message fails (or is dropped)
with its coordinates at the point it is processed. Serdes are resolved once per input
partition at construction: the hot path does one dict lookup per envelope.

Extension point for control messages (Samza design): ``set_stream_decoder(system_stream, decoder)``
installs a decoder for a stream (intermediate streams use the intermediate-message serde).
A decoder's ``decode(envelope)`` deserializes in place and returns True for a user message,
or False for a control message (``envelope.message`` then holds the control object); the
instance hands control messages to ``control_message_handler(instance, envelope)``, which
returns None (consumed: bookkeeping updated) or an envelope to act on — an end-of-stream
envelope marks that partition ended, any other is given to the task. ``checkpoint_state``
(callable → (end_of_stream dict, watermarks dict)) lets that bookkeeping ride in checkpoints.
``end_of_stream_listener(ssp)`` is called once per partition when it ends (a bounded input's
end-of-stream envelope, or a reconciled intermediate end-of-stream), before the task's own
end-of-stream handling — the operator runtime ends operators partition by partition with it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from samza_dagster.container.errors import DeserializationError, TaskProcessError, coordinates
from samza_dagster.container.metrics import TaskMetrics, register_store_metrics, register_task_metrics
from samza_dagster.metrics.registry import MetricsRegistry, task_source
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.model import END_OF_STREAM_OFFSET, IncomingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.task.api import (
    is_async_task,
    is_closable,
    is_end_of_stream_listener,
    is_initable,
    is_windowable,
)
from samza_dagster.task.collector import MessageCollector
from samza_dagster.task.context import TaskContext
from samza_dagster.task.coordinator import ContainerRequests, TaskCoordinator


_perf_counter = time.perf_counter


@dataclass(slots=True)
class InFlight:
    """A message the scheduled run loop started, in its task's per-partition queue (offset
    order) until it and every message before it have completed."""

    offset: str
    completed: bool = False


class SerdeDecoder:
    """Deserializes key and message in place with a stream's serdes."""

    __slots__ = ("key_serde", "msg_serde")

    def __init__(self, key_serde: Any, msg_serde: Any) -> None:
        self.key_serde = key_serde
        self.msg_serde = msg_serde

    def decode(self, envelope: IncomingMessageEnvelope) -> bool:
        ks = self.key_serde
        if ks is not None and envelope.key is not None:
            envelope.key = ks.from_bytes(envelope.key)
        ms = self.msg_serde
        if ms is not None and envelope.message is not None:
            envelope.message = ms.from_bytes(envelope.message)
        return True


class TaskInstance:
    def __init__(
        self,
        task_name: str,
        task: Any,
        ssps: frozenset[SystemStreamPartition],
        *,
        config: Any,
        container_id: str,
        producers: dict,
        serdes: SerdeRegistry,
        container_requests: ContainerRequests,
        stores: Any = None,
        changelog_partition: int = 0,
        drop_deserialization_errors: bool = False,
        dead_letter: Any = None,
    ) -> None:
        self.task_name = task_name
        self.task = task
        self.ssps = ssps
        self.is_async = is_async_task(task)
        self.is_windowable = is_windowable(task)
        self.is_eos_listener = is_end_of_stream_listener(task)
        self.metrics = TaskMetrics(task_name, ssps)
        self.metrics_registry = MetricsRegistry(task_source(task_name))
        self.collector = MessageCollector(task_name, producers, serdes)
        self.coordinator = TaskCoordinator(task_name, container_requests)
        self._container_requests = container_requests
        self.task_stores = stores
        self.context = TaskContext(
            task_name, ssps, config, container_id, self.metrics, stores.stores if stores is not None else {}, changelog_partition,
            metrics_registry=self.metrics_registry,
        )
        self.drop_deserialization_errors = drop_deserialization_errors
        #: a DeadLetterSender (``task.dlq.stream``): undecodable messages go there and are skipped
        self.dead_letter = dead_letter
        self._serdes = serdes
        self._decoders: dict[SystemStreamPartition, Any] = {}
        by_stream: dict[SystemStream, Any] = {}
        for ssp in ssps:
            ss = SystemStream(ssp.system, ssp.stream)
            if ss not in by_stream:
                ks, ms = serdes.key_serde(ss), serdes.msg_serde(ss)
                by_stream[ss] = SerdeDecoder(ks, ms) if (ks is not None or ms is not None) else None
            self._decoders[ssp] = by_stream[ss]
        self.control_message_handler: Callable[[TaskInstance, IncomingMessageEnvelope], Any] | None = None
        self.checkpoint_state: Callable[[], tuple[dict, dict]] | None = None
        self.end_of_stream_listener: Callable[[SystemStreamPartition], None] | None = None
        self.context.task_instance = self
        #: offset of the last message processed per SSP (what a checkpoint records)
        self.last_processed: dict[SystemStreamPartition, str] = {}
        self.end_of_stream_ssps: set[SystemStreamPartition] = set()
        # -- run loop scheduling state (owned by the run loop's thread) -------------------------
        self.pending: deque[IncomingMessageEnvelope] = deque()
        self.in_flight = 0
        #: per SSP, the started messages in start (= offset) order
        self.in_flight_offsets: dict[SystemStreamPartition, deque[InFlight]] = {ssp: deque() for ssp in ssps}
        self.exclusive_running = False  # window running in the pool
        self.window_due = False
        self.commit_due = False
        self.end_of_stream_due = False
        self.done = False  # ended (end of stream) or shut down
        self.uncommitted = False  # processed something since the last checkpoint
        self._process = getattr(task, "process_async" if self.is_async else "process")
        self._metrics = self.metrics
        self._processed = self.metrics.processed
        register_task_metrics(self.metrics_registry, self.metrics, self.last_processed)
        if stores is not None:
            register_store_metrics(self.metrics_registry, stores)

    # -- lifecycle -----------------------------------------------------------------------------
    def init(self) -> None:
        if is_initable(self.task):
            self.task.init(self.context)

    def close(self) -> None:
        if is_closable(self.task):
            self.task.close()
        if self.task_stores is not None:
            self.task_stores.close()

    def set_stream_decoder(self, system_stream: SystemStream, decoder: Any) -> None:
        for ssp in self.ssps:
            if ssp.system == system_stream.system and ssp.stream == system_stream.stream:
                self._decoders[ssp] = decoder

    # -- per message ---------------------------------------------------------------------------
    def needs_decoding(self, ssp: SystemStreamPartition) -> bool:
        return self._decoders.get(ssp) is not None

    def prepare(self, envelope: IncomingMessageEnvelope) -> IncomingMessageEnvelope | None:
        """Deserialize ``envelope`` in place. None when there is nothing to give the task
        (a dropped bad message or a consumed control message): its offset still counts as
        processed. May return another envelope (a reconciled control message)."""
        decoder = self._decoders[envelope.ssp]
        if decoder is None:
            return envelope
        raw_key, raw_message = envelope.key, envelope.message  # decode works in place
        try:
            is_user = decoder.decode(envelope)
        except Exception as exc:  # noqa: BLE001 - any serde failure, wrapped with coordinates
            if self.dead_letter is not None:
                envelope.key, envelope.message = raw_key, raw_message
                self.dead_letter.send(self.task_name, envelope, raw_key, raw_message, exc)
                self.metrics.deserialization_errors_dead_lettered += 1
                return None
            if self.drop_deserialization_errors:
                self.metrics.deserialization_errors_dropped += 1
                return None
            raise DeserializationError(
                f"task {self.task_name!r} cannot deserialize the message at {coordinates(envelope)}: {exc} "
                f"(set task.drop.deserialization.errors=true to skip such messages, or task.dlq.stream to "
                f"send them to a dead-letter stream)",
                self.task_name,
                envelope,
            ) from exc
        if is_user:
            return envelope
        self.metrics.control_messages += 1
        handler = self.control_message_handler
        if handler is None:
            raise TaskProcessError(
                f"task {self.task_name!r} received a control message at {coordinates(envelope)} but no "
                f"control message handler is installed",
                self.task_name,
                envelope,
            )
        return handler(self, envelope)

    def process_inline(self, envelope: IncomingMessageEnvelope) -> None:
        """Synchronous processing on the caller's thread (the single-threaded fast path):
        deserialize, process, record the offset."""
        ssp = envelope.ssp
        if self._decoders[ssp] is None:
            env: IncomingMessageEnvelope | None = envelope
        else:
            env = self.prepare(envelope)
            if env is not None and env.offset == END_OF_STREAM_OFFSET:
                self.mark_end_of_stream(env.ssp)
                env = None
        if env is not None:
            t0 = _perf_counter()
            try:
                self._process(env, self.collector, self.coordinator)
            except Exception as exc:
                raise self.process_error(env, exc) from exc
            self._metrics.process_s += _perf_counter() - t0
        self.last_processed[ssp] = envelope.offset
        self._processed[ssp] += 1
        self.uncommitted = True

    def call_process(self, envelope: IncomingMessageEnvelope, callback: Any = None) -> None:
        if callback is None:
            self._process(envelope, self.collector, self.coordinator)
        else:
            self._process(envelope, self.collector, self.coordinator, callback)

    def process_error(self, envelope: IncomingMessageEnvelope, exc: BaseException) -> TaskProcessError:
        if isinstance(exc, TaskProcessError):
            return exc
        return TaskProcessError(
            f"task {self.task_name!r} failed processing the message at {coordinates(envelope)}: "
            f"{type(exc).__name__}: {exc}",
            self.task_name,
            envelope,
        )

    def mark_end_of_stream(self, ssp: SystemStreamPartition) -> None:
        if ssp not in self.end_of_stream_ssps:
            listener = self.end_of_stream_listener
            if listener is not None:
                listener(ssp)
            self.end_of_stream_ssps.add(ssp)
            self.metrics.end_of_stream_ssps += 1
            if len(self.end_of_stream_ssps) >= len(self.ssps):
                self.end_of_stream_due = True
                self._container_requests.asking.append(self.task_name)
                self._container_requests.pending = True

    # -- window / end of stream ----------------------------------------------------------------
    def window(self) -> None:
        t0 = time.perf_counter()
        try:
            self.task.window(self.collector, self.coordinator)
        except Exception as exc:
            raise TaskProcessError(
                f"task {self.task_name!r} failed in window(): {type(exc).__name__}: {exc}", self.task_name
            ) from exc
        self.metrics.window_count += 1
        self.metrics.window_s += time.perf_counter() - t0
        self.uncommitted = True

    def end_of_stream(self) -> None:
        if self.is_eos_listener:
            try:
                self.task.on_end_of_stream(self.collector, self.coordinator)
            except Exception as exc:
                raise TaskProcessError(
                    f"task {self.task_name!r} failed in on_end_of_stream(): {type(exc).__name__}: {exc}",
                    self.task_name,
                ) from exc
        self.uncommitted = True

    def __repr__(self) -> str:
        return f"TaskInstance({self.task_name!r})"
