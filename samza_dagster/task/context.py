"""TaskContext: what a task learns at ``init`` — Samza's TaskContext.

The task's model (its name, input partitions and changelog partition), its stores, its metrics
registry, the job's config and the container's id, and ``set_start_offset``. Nothing of the
engine: the container's own task (the high-level API's operator runtime) gets an engine-internal
subclass (``samza_dagster.container.internal_context``), as Samza's StreamOperatorTask gets its
TaskContextImpl.
"""

from __future__ import annotations

from collections.abc import Mapping

from samza_dagster.config.config import Config
from samza_dagster.metrics.registry import MetricsRegistry
from samza_dagster.model import SystemStreamPartition
from samza_dagster.storage.kv import KeyValueStore
from samza_dagster.task.errors import NoSuchStoreError, NotTheTasksPartitionError


class TaskContext:
    __slots__ = (
        "task_name",
        "system_stream_partitions",
        "config",
        "container_id",
        "_stores",
        "changelog_partition",
        "metrics_registry",
        "_start_offsets",
    )

    def __init__(
        self,
        task_name: str,
        system_stream_partitions: frozenset[SystemStreamPartition],
        config: Config,
        container_id: str,
        stores: Mapping[str, KeyValueStore],
        metrics_registry: MetricsRegistry,
        changelog_partition: int = 0,
    ) -> None:
        self.task_name = task_name
        self.system_stream_partitions = system_stream_partitions
        self.config = config
        self.container_id = container_id
        self._stores = stores
        self.changelog_partition = changelog_partition
        #: the task's MetricsRegistry (Samza's task metrics registry): ``new_counter(group, name)``,
        #: ``new_gauge(group, name, default)``, ``new_timer``, ``new_list_gauge`` — what a task
        #: registers there is in every snapshot its container's reporters write
        self.metrics_registry = metrics_registry
        self._start_offsets: dict[SystemStreamPartition, str] = {}

    def get_store(self, name: str) -> KeyValueStore:
        store = self._stores.get(name)
        if store is None:
            known = ", ".join(sorted(self._stores)) or "none"
            raise NoSuchStoreError(
                f"task {self.task_name!r} has no store {name!r} (configure stores.{name}.factory); stores: {known}"
            )
        return store

    @property
    def store_names(self) -> list[str]:
        return sorted(self._stores)

    def set_start_offset(self, ssp: SystemStreamPartition, offset: str) -> None:
        """Samza's ``setStartingOffset``: read ``ssp`` from ``offset`` (the first message to
        process) on this start, whatever the checkpoint or a startpoint says. Only during
        ``init``, and only for one of this task's partitions."""
        if ssp not in self.system_stream_partitions:
            raise NotTheTasksPartitionError(
                f"task {self.task_name!r}: set_start_offset for {ssp.system}.{ssp.stream}[{ssp.partition}], "
                f"which is not one of its input partitions"
            )
        self._start_offsets[ssp] = str(offset)

    @property
    def start_offsets(self) -> Mapping[SystemStreamPartition, str]:
        """The offsets ``set_start_offset`` asked for (the container applies them after ``init``)."""
        return self._start_offsets
