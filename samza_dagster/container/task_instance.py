"""TaskInstance: one task object and what belongs to it alone — lazy per-envelope
deserialization, the offsets processed, which partitions ended, its collector, coordinator,
stores, metrics, its context and its last checkpoint — and the per-task steps of a commit.

Who owns what (docs/architecture.md, "A task's state"): this class writes every attribute it
defines, through the methods below; the run loop's scheduling state per task (queued and in-flight
messages, what is due) is the run loop's (``container/task_worker.py``); the container
orchestrates a commit of several tasks (``SamzaContainer._commit``) through
:meth:`begin_commit`, :meth:`checkpoint` and :meth:`committed`.

Deserialization happens here, not in the consumer, so a bad message fails (or is dropped)
with its coordinates at the point it is processed. Serdes are resolved once per input
partition at construction: the hot path does one dict lookup per envelope.

Control messages: the high-level API's operator runtime installs decoders for its streams
(``set_stream_decoder``; intermediate streams use the intermediate-message serde) and its
control-message handling (``install_control_handling``) through the typed hooks of
:class:`~samza_dagster.container.internal_context.OperatorTaskHooks`. A decoder's
``decode(envelope)`` returns False for a control message; the handler then returns None
(consumed) or an envelope to act on — an end-of-stream envelope marks that partition ended. The
handler's ``snapshot()`` rides in every checkpoint; ``on_partition_end(ssp)`` is called once per
partition as it ends, before the task's own end-of-stream handling.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from samza_dagster.checkpoint.checkpoint import Checkpoint
from samza_dagster.config.config import Config
from samza_dagster.container.dead_letter import DeadLetterSender
from samza_dagster.container.errors import ContainerError, DeserializationError, TaskProcessError, coordinates
from samza_dagster.container.internal_context import ControlMessageHandling, InternalTaskContext, MessageDecoder
from samza_dagster.container.metrics import TaskMetrics, register_store_metrics, register_task_metrics
from samza_dagster.container.table_replay import TableReplay
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.metrics.registry import MetricsRegistry, task_source
from samza_dagster.model import (
    END_OF_STREAM_OFFSET,
    ColumnarEnvelope,
    IncomingMessageEnvelope,
    SystemStream,
    SystemStreamPartition,
)
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.serde.serdes import Serde
from samza_dagster.storage.task_stores import TaskStores
from samza_dagster.system.protocols import SystemProducer
from samza_dagster.task.api import (
    is_async_task,
    is_batch_task,
    is_closable,
    is_end_of_stream_listener,
    is_initable,
    is_windowable,
)
from samza_dagster.task.batch_formats import columnar_batches, columnar_format, rows_in
from samza_dagster.task.callback import TaskCallback
from samza_dagster.task.collector import MessageCollector
from samza_dagster.task.coordinator import ContainerRequests, TaskCoordinator

_perf_counter = time.perf_counter


class InlineBinding(NamedTuple):
    """What the inline run loop binds per input partition that needs no deserialization (see
    :meth:`TaskInstance.inline_binding`). A NamedTuple: the hot path unpacks it positionally as
    cheaply as a tuple, and everywhere else its fields have names."""

    ti: TaskInstance
    process: Callable[..., Any]
    collector: MessageCollector
    coordinator: TaskCoordinator
    #: the task's processed offset per partition (what its checkpoint records)
    last_processed: dict[SystemStreamPartition, str]
    #: the task's processed count per partition
    counts: dict[SystemStreamPartition, int]
    metrics: TaskMetrics


def _no_process(*_args: object) -> None:
    raise ContainerError("a batch task (process_batch only) was handed a single message")


class SerdeDecoder:
    """Deserializes key and message in place with a stream's serdes."""

    __slots__ = ("key_serde", "msg_serde")

    def __init__(self, key_serde: Serde | None, msg_serde: Serde | None) -> None:
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
    """One task and what is its alone (module docstring). The run loop calls ``process_inline`` (or
    the scheduled mode's steps), ``window`` and ``end_of_stream``; the container calls
    ``begin_commit``, ``checkpoint`` and ``committed`` around a commit. Attributes are written only
    by its own methods."""

    def __init__(
        self,
        task_name: str,
        task: object,
        ssps: frozenset[SystemStreamPartition],
        *,
        config: Config,
        container_id: str,
        producers: Mapping[str, SystemProducer],
        serdes: SerdeRegistry,
        container_requests: ContainerRequests,
        stores: TaskStores | None = None,
        changelog_partition: int = 0,
        drop_deserialization_errors: bool = False,
        dead_letter: DeadLetterSender | None = None,
        job_model: JobModel | None = None,
        last_checkpoint: Checkpoint | None = None,
        replay: TableReplay | None = None,
    ) -> None:
        self.task_name = task_name
        self.task = task
        self.ssps = ssps
        self.is_async = is_async_task(task)
        #: the task takes batches (``process_batch``): the run loop hands it runs of a partition
        self.is_batch = is_batch_task(task)
        self._process_batch = task.process_batch if is_batch_task(task) else None
        #: "arrow" / "pandas": the task takes its batches as columns (``batch_format``), and its
        #: partitions on a system that reads columns arrive as Arrow batches (ColumnarEnvelope)
        self.columnar_format = columnar_format(task) if self.is_batch else None
        #: the inputs a batch task of envelopes takes as Arrow batches where their system reads
        #: columns (an operator graph's inputs straight into a ``map_batches``)
        self._columnar_inputs: frozenset[SystemStream] = (
            frozenset(getattr(task, "columnar_inputs", ())) if self.is_batch else frozenset()
        )
        #: the partitions whose consumer delivers ColumnarEnvelopes (set by the container before
        #: its consumers start: ``takes_columns``); their runs count rows, not envelopes
        self.columnar_ssps: set[SystemStreamPartition] = set()
        #: the task's window / end-of-stream hooks, when it has them
        self._window = task.window if is_windowable(task) else None
        self._on_end_of_stream = task.on_end_of_stream if is_end_of_stream_listener(task) else None
        self.is_windowable = self._window is not None
        self.metrics = TaskMetrics(task_name, ssps)
        self.metrics_registry = MetricsRegistry(task_source(task_name))
        #: tables ahead of the task's checkpoint (a restart after a crash between their commits
        #: and the checkpoint stream's): what it replays up to there does not reach them again
        self.replay = replay
        if replay is not None:
            producers = replay.producers(producers)
            self.process_inline = self._replaying_inline  # type: ignore[method-assign]
            self.process_run = self._replaying_run  # type: ignore[method-assign]
        self.collector = MessageCollector(task_name, producers, serdes)
        self.coordinator = TaskCoordinator(task_name, container_requests)
        self._container_requests = container_requests
        self.task_stores = stores
        #: the checkpoint the task's next commit follows (read back at start, then its own)
        self.last_checkpoint = last_checkpoint
        self.context = InternalTaskContext(
            task_name,
            ssps,
            config,
            container_id,
            stores.stores if stores is not None else {},
            self.metrics_registry,
            changelog_partition,
            task_instance=self,
            job_model=job_model,
            producers=producers,
            last_checkpoint=last_checkpoint,
            metrics=self.metrics,
        )
        self.drop_deserialization_errors = drop_deserialization_errors
        #: undecodable messages go there and are skipped (``task.dlq.stream``)
        self.dead_letter = dead_letter
        self._decoders: dict[SystemStreamPartition, MessageDecoder | None] = {}
        by_stream: dict[SystemStream, SerdeDecoder | None] = {}
        for ssp in ssps:
            ss = SystemStream(ssp.system, ssp.stream)
            if ss not in by_stream:
                ks, ms = serdes.key_serde(ss), serdes.msg_serde(ss)
                by_stream[ss] = SerdeDecoder(ks, ms) if (ks is not None or ms is not None) else None
            self._decoders[ssp] = by_stream[ss]
        self._control_handler: ControlMessageHandling | None = None
        self._on_partition_end: Callable[[SystemStreamPartition], None] | None = None
        #: offset of the last message processed per SSP (what a checkpoint records)
        self.last_processed: dict[SystemStreamPartition, str] = {}
        self.end_of_stream_ssps: set[SystemStreamPartition] = set()
        #: every input partition has ended: the run loop runs the task's end of stream once
        self.all_ended = False
        #: processed something (or must checkpoint) since the last checkpoint; the inline fast
        #: path does not set it per message: :meth:`begin_commit` compares offsets too
        self.uncommitted = False
        # a batch-only task has no per-message process; the run loop never calls it then
        self._process: Callable[..., Any] = getattr(task, "process_async" if self.is_async else "process", _no_process)
        self._metrics = self.metrics
        self._processed = self.metrics.processed
        register_task_metrics(self.metrics_registry, self.metrics, self.last_processed)
        if stores is not None:
            register_store_metrics(self.metrics_registry, stores)

    def takes_columns(self, ssp: SystemStreamPartition) -> bool:
        """Whether the task takes this partition as Arrow batches where its system reads columns:
        a batch task with a columnar ``batch_format`` takes all its partitions so; a batch task of
        envelopes those of its ``columnar_inputs`` (and handles the ColumnarEnvelopes itself)."""
        return self.columnar_format is not None or ssp.system_stream in self._columnar_inputs

    # -- lifecycle -----------------------------------------------------------------------------
    def init(self) -> None:
        if is_initable(self.task):
            self.task.init(self.context)

    def close(self) -> None:
        if is_closable(self.task):
            self.task.close()
        if self.task_stores is not None:
            self.task_stores.close()

    # -- the operator runtime's hooks (OperatorTaskHooks) ---------------------------------------
    def set_stream_decoder(self, system_stream: SystemStream, decoder: MessageDecoder) -> None:
        for ssp in self.ssps:
            if ssp.system == system_stream.system and ssp.stream == system_stream.stream:
                self._decoders[ssp] = decoder

    def decodes(self, ssp: SystemStreamPartition) -> bool:
        """Whether ``ssp``'s messages go through a decoder (a serde's, or the operator runtime's)."""
        return self._decoders.get(ssp) is not None

    def install_control_handling(
        self, handler: ControlMessageHandling, on_partition_end: Callable[[SystemStreamPartition], None]
    ) -> None:
        self._control_handler = handler
        self._on_partition_end = on_partition_end

    def forget_replay(self, ssps: set[SystemStreamPartition]) -> None:
        """These partitions start elsewhere than the checkpoint: no table is muted for them."""
        if self.replay is not None and ssps:
            self.replay.forget(ssps)

    # -- the run loop's ---------------------------------------------------------------------------
    def inline_binding(self, ssp: SystemStreamPartition) -> InlineBinding | None:
        """What processing one envelope of ``ssp`` touches, for the inline run loop to bind once:
        it then processes and records the offset and count itself (the hot path: one dict lookup
        per envelope). None when ``ssp`` needs deserializing, or the task replays into tables
        (:meth:`process_inline` then)."""
        if self._decoders.get(ssp) is not None or self.replay is not None:
            return None
        return InlineBinding(
            self,
            self._process,
            self.collector,
            self.coordinator,
            self.last_processed,
            self._processed,
            self._metrics,
        )

    def completed(self, ssp: SystemStreamPartition, offset: str | None) -> None:
        """A message of ``ssp`` completed (scheduled mode); ``offset``: the processed offset it
        advanced to, None when an earlier message of the partition is still in flight."""
        self._processed[ssp] += 1
        if offset is not None:
            self.last_processed[ssp] = offset

    # -- per message ---------------------------------------------------------------------------
    def prepare(self, envelope: IncomingMessageEnvelope) -> IncomingMessageEnvelope | None:
        """Deserialize ``envelope`` in place. None when there is nothing to give the task
        (a dropped bad message or a consumed control message): its offset still counts as
        processed. May return another envelope (a reconciled control message)."""
        self.uncommitted = True
        user = self._decode(envelope)
        if user is True:
            return envelope
        if user is None:
            return None
        self.metrics.control_messages += 1
        return self._control(envelope)

    def _decode(self, envelope: IncomingMessageEnvelope) -> bool | None:
        """Deserialize ``envelope`` in place: True for a user message, False for a control
        message, None for a bad message sent to the dead-letter stream or dropped."""
        decoder = self._decoders[envelope.ssp]
        if decoder is None:
            return True
        raw_key, raw_message = envelope.key, envelope.message  # decode works in place
        try:
            return bool(decoder.decode(envelope))
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

    def _control(self, envelope: IncomingMessageEnvelope) -> IncomingMessageEnvelope | None:
        """A control message to the installed handler: None (consumed) or an envelope to act on."""
        handler = self._control_handler
        if handler is None:
            raise TaskProcessError(
                f"task {self.task_name!r} received a control message at {coordinates(envelope)} but no "
                f"control message handler is installed",
                self.task_name,
                envelope,
            )
        return handler(envelope)

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

    def _replaying_inline(self, envelope: IncomingMessageEnvelope) -> None:
        """:meth:`process_inline` while tables hold part of what the task replays."""
        replay = self.replay
        assert replay is not None
        replay.at(envelope.ssp, envelope.offset)
        TaskInstance.process_inline(self, envelope)
        replay.muted = frozenset()

    def _replaying_run(self, run: list[IncomingMessageEnvelope]) -> None:
        """:meth:`process_run` while tables hold part of what the task replays: in pieces that
        mute the same tables."""
        replay = self.replay
        assert replay is not None
        for piece in replay.runs(run):
            TaskInstance.process_run(self, piece)
        replay.muted = frozenset()

    def process_run(self, run: list[IncomingMessageEnvelope]) -> None:
        """A batch task's processing of one chosen run (one partition's envelopes in offset order,
        an end-of-stream envelope only ever last, which the caller handles): the messages go to
        ``process_batch`` together, split only where a control message sits between them, so the
        control message acts after the messages before it and before those after it. Dropped and
        dead-lettered messages are left out of the batch; their offsets still count as processed.
        The offsets are recorded after each batch returns: a commit (which only runs between
        runs) covers whole batches only."""
        ssp = run[0].ssp
        if self._decoders[ssp] is None:
            self._call_batch(run)
        else:
            self._process_decoded_run(run)
        self.last_processed[ssp] = run[-1].offset
        self._processed[ssp] += rows_in(run) if ssp in self.columnar_ssps else len(run)
        self.uncommitted = True

    def _process_decoded_run(self, run: list[IncomingMessageEnvelope]) -> None:
        batch: list[IncomingMessageEnvelope] = []
        for envelope in run:
            user = self._decode(envelope)
            if user is True:
                batch.append(envelope)
            elif user is False:  # a control message: the messages before it first
                if batch:
                    self._call_batch(batch)
                    batch = []
                self.metrics.control_messages += 1
                acted = self._control(envelope)
                if acted is not None and acted.offset == END_OF_STREAM_OFFSET:
                    self.mark_end_of_stream(acted.ssp)
        if batch:
            self._call_batch(batch)

    def _call_batch(self, batch: Sequence[IncomingMessageEnvelope]) -> None:
        assert self._process_batch is not None  # the run loop hands runs to batch tasks only
        t0 = _perf_counter()
        try:
            if self.columnar_format is None:
                self._process_batch(batch, self.collector, self.coordinator)
            else:
                for columns in columnar_batches(batch, self.columnar_format):
                    self._process_batch(columns, self.collector, self.coordinator)
        except Exception as exc:
            raise self.batch_error(batch, exc) from exc
        self._metrics.process_s += _perf_counter() - t0
        self._metrics.batch_count += 1

    def batch_error(self, batch: Sequence[IncomingMessageEnvelope], exc: BaseException) -> TaskProcessError:
        if isinstance(exc, TaskProcessError):
            return exc
        first, last = batch[0], batch[-1]
        at = coordinates(first) if type(first) is not ColumnarEnvelope else coordinates(first, first.first_offset)
        return TaskProcessError(
            f"task {self.task_name!r} failed processing the batch of {rows_in(batch)} messages at "
            f"{at}..{last.offset}: {type(exc).__name__}: {exc}",
            self.task_name,
            first,
        )

    def call_process(self, envelope: IncomingMessageEnvelope, callback: TaskCallback | None = None) -> None:
        if self.replay is not None:  # one message at a time (the container's _table_replay)
            self.replay.at(envelope.ssp, envelope.offset)
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
            listener = self._on_partition_end
            if listener is not None:
                listener(ssp)
            self.end_of_stream_ssps.add(ssp)
            self.metrics.end_of_stream_ssps += 1
            if len(self.end_of_stream_ssps) >= len(self.ssps):
                self.all_ended = True
                self._container_requests.ask(self.task_name)

    # -- window / end of stream ----------------------------------------------------------------
    def window(self) -> None:
        t0 = time.perf_counter()
        try:
            assert self._window is not None  # the run loop windows windowable tasks only
            if self.replay is not None:
                self.replay.in_window()
            self._window(self.collector, self.coordinator)
        except Exception as exc:
            raise TaskProcessError(
                f"task {self.task_name!r} failed in window(): {type(exc).__name__}: {exc}", self.task_name
            ) from exc
        self.metrics.window_count += 1
        self.metrics.window_s += time.perf_counter() - t0
        self.uncommitted = True

    def end_of_stream(self) -> None:
        if self._on_end_of_stream is not None:
            if self.replay is not None:  # a table's checkpoint does not say whether it ran: it runs
                self.replay.muted = frozenset()
            try:
                self._on_end_of_stream(self.collector, self.coordinator)
            except Exception as exc:
                raise TaskProcessError(
                    f"task {self.task_name!r} failed in on_end_of_stream(): {type(exc).__name__}: {exc}",
                    self.task_name,
                ) from exc
        self.uncommitted = True

    # -- commit: the per-task steps (the container batches tasks due together) -----------------
    def request_checkpoint(self) -> None:
        """The next commit writes a checkpoint even when nothing was processed (a startpoint
        was applied: its position must be checkpointed)."""
        self.uncommitted = True

    def begin_commit(
        self, fill: Callable[[str, dict[SystemStreamPartition, str]], None] | None = None
    ) -> dict[SystemStreamPartition, str] | None:
        """A commit's first step for this task: the input offsets its checkpoint records, with
        its stores flushed — None when nothing is new since its last checkpoint. ``fill`` adds
        what is not processed but must be checkpointed (a startpoint's position); a partition
        not processed since keeps the last checkpoint's offset."""
        offsets = dict(self.last_processed)
        previous = self.last_checkpoint
        # the inline fast path does not flag each message: unchanged offsets + no window/EOS
        # since the last checkpoint means there is nothing new to commit
        if (
            not self.uncommitted
            and previous is not None
            and all(previous.offsets.get(s) == o for s, o in offsets.items())
        ):
            return None
        if fill is not None:  # before the previous checkpoint's offsets: they are older
            fill(self.task_name, offsets)
        if previous is not None:
            for ssp, off in previous.offsets.items():
                offsets.setdefault(ssp, off)
        if self.task_stores is not None:
            self.task_stores.flush()
        return offsets

    def checkpoint(
        self,
        offsets: dict[SystemStreamPartition, str],
        changelog_offsets: dict[str, tuple[SystemStreamPartition, str | None]],
    ) -> Checkpoint:
        """The task's checkpoint over ``offsets`` (from :meth:`begin_commit`), once its output and
        changelog writes are durable: with its control bookkeeping."""
        eos: dict[str, Any] = {}
        watermarks: dict[str, Any] = {}
        if self._control_handler is not None:
            eos, watermarks = self._control_handler.snapshot()
        return Checkpoint(offsets, changelog_offsets, eos, watermarks)

    def committed(self, checkpoint: Checkpoint) -> None:
        """``checkpoint`` is written (and, exactly-once, its transaction committed)."""
        self.last_checkpoint = checkpoint
        self.uncommitted = False

    def __repr__(self) -> str:
        return f"TaskInstance({self.task_name!r})"
