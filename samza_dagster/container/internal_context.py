"""What the container gives its own task — the high-level API's OperatorTask — beyond a user's
TaskContext (Samza: ``TaskContextImpl``, which ``StreamOperatorTask`` casts its context to).

A user task receives a :class:`~samza_dagster.task.context.TaskContext` and is typed against it:
its name and partitions, stores, metrics registry, config, ``set_start_offset``. The operator
runtime needs more, and only this: the JobModel (producer task counts of intermediate streams),
the producers (control messages to every partition of an intermediate stream), its last
checkpoint (the control bookkeeping it restores), the task's engine counters, and a few hooks into
its TaskInstance (:class:`OperatorTaskHooks`). The TaskInstance builds an
:class:`InternalTaskContext` for every task; ``isinstance(context, InternalTaskContext)`` is how
the operator runtime knows it runs inside a SamzaContainer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from samza_dagster.checkpoint.checkpoint import Checkpoint
from samza_dagster.config.config import Config
from samza_dagster.container.metrics import TaskMetrics
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.metrics.registry import MetricsRegistry
from samza_dagster.model import IncomingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.storage.kv import KeyValueStore
from samza_dagster.system.protocols import SystemProducer
from samza_dagster.task.collector import MessageCollector
from samza_dagster.task.context import TaskContext
from samza_dagster.task.coordinator import TaskCoordinator

#: a task's control-message bookkeeping as its checkpoint carries it: (end_of_stream, watermarks),
#: opaque JSON objects
ControlState = tuple[dict[str, Any], dict[str, Any]]


class MessageDecoder(Protocol):
    """Deserializes an envelope's key and message in place; True for a user message, False for
    a control message (``envelope.message`` then holds the control object)."""

    def decode(self, envelope: IncomingMessageEnvelope) -> bool: ...


class ControlMessageHandling(Protocol):
    """Takes the control messages a decoder found: returns None when the message was consumed
    (bookkeeping updated), or an envelope to act on — an end-of-stream envelope ends its
    partition. ``snapshot`` is that bookkeeping for the task's checkpoint."""

    def __call__(self, envelope: IncomingMessageEnvelope) -> IncomingMessageEnvelope | None: ...

    def snapshot(self) -> ControlState: ...


class OperatorTaskHooks(Protocol):
    """What a TaskInstance lets the operator runtime do to it, and nothing else."""

    @property
    def collector(self) -> MessageCollector: ...

    @property
    def coordinator(self) -> TaskCoordinator: ...

    def set_stream_decoder(self, system_stream: SystemStream, decoder: MessageDecoder) -> None:
        """Decode ``system_stream``'s messages with ``decoder`` instead of the configured serdes."""

    def install_control_handling(
        self, handler: ControlMessageHandling, on_partition_end: Callable[[SystemStreamPartition], None]
    ) -> None:
        """Hand control messages to ``handler``, checkpoint its bookkeeping, and call
        ``on_partition_end(ssp)`` once per partition as it ends (before the task's own
        end-of-stream handling). Once, at ``init``."""

    def mark_end_of_stream(self, ssp: SystemStreamPartition) -> None:
        """``ssp`` has ended (a checkpoint restored it as ended)."""


class InternalTaskContext(TaskContext):
    """The TaskContext the container hands every task; only the engine's own task reads the
    fields beyond TaskContext's."""

    __slots__ = ("task_instance", "job_model", "producers", "last_checkpoint", "metrics")

    def __init__(
        self,
        task_name: str,
        system_stream_partitions: frozenset[SystemStreamPartition],
        config: Config,
        container_id: str,
        stores: Mapping[str, KeyValueStore],
        metrics_registry: MetricsRegistry,
        changelog_partition: int,
        *,
        task_instance: OperatorTaskHooks,
        job_model: JobModel | None,
        producers: Mapping[str, SystemProducer],
        last_checkpoint: Checkpoint | None,
        metrics: TaskMetrics,
    ) -> None:
        super().__init__(
            task_name, system_stream_partitions, config, container_id, stores, metrics_registry, changelog_partition
        )
        self.task_instance = task_instance
        #: None only for a TaskInstance built outside a container (unit tests of one task)
        self.job_model = job_model
        self.producers = producers
        #: the checkpoint the task starts from (read back at start; later ones are its TaskInstance's)
        self.last_checkpoint = last_checkpoint
        #: the task's engine counters (``counters``: the operators' own, e.g. late messages)
        self.metrics = metrics
