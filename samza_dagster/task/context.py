"""TaskContext: what a task learns at ``init``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.model import SystemStreamPartition
from samza_dagster.task.errors import NoSuchStoreError


class TaskContext:
    __slots__ = (
        "task_name", "system_stream_partitions", "config", "container_id", "metrics", "_stores", "changelog_partition",
        "task_instance", "container", "metrics_registry",
    )

    def __init__(
        self,
        task_name: str,
        system_stream_partitions: frozenset[SystemStreamPartition],
        config: Config,
        container_id: str,
        metrics: Any,
        stores: Mapping[str, Any],
        changelog_partition: int = 0,
        metrics_registry: Any = None,
    ) -> None:
        self.task_name = task_name
        self.system_stream_partitions = system_stream_partitions
        self.config = config
        self.container_id = container_id
        self.metrics = metrics
        self._stores = stores
        self.changelog_partition = changelog_partition
        #: the task's MetricsRegistry (Samza's task metrics registry): ``new_counter(group, name)``,
        #: ``new_gauge(group, name, default)``, ``new_timer``, ``new_list_gauge`` — what a task
        #: registers there is in every snapshot its container's reporters write
        self.metrics_registry = metrics_registry
        #: engine back-references for framework tasks (the operator runtime installs decoders
        #: and control-message handling on its TaskInstance, and reads the JobModel, producers
        #: and last checkpoint from its container). Set by the container; user tasks need neither.
        self.task_instance: Any = None
        self.container: Any = None

    def get_store(self, name: str) -> Any:
        store = self._stores.get(name)
        if store is None:
            known = ", ".join(sorted(self._stores)) or "none"
            raise NoSuchStoreError(f"task {self.task_name!r} has no store {name!r} (configure stores.{name}.factory); stores: {known}")
        return store

    @property
    def store_names(self) -> list[str]:
        return sorted(self._stores)
