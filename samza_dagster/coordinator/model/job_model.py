"""The JobModel: a job's containers, their tasks, each task's input partitions and
changelog partition, and the config they run with (Samza design)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from samza_dagster.codec import from_wire, to_wire
from samza_dagster.config.config import Config
from samza_dagster.config.secrets import mask_config
from samza_dagster.model import SystemStreamPartition


@dataclass(frozen=True)
class TaskModel:
    """One task: its Samza task name (``Partition 0`` or ``SystemStreamPartition [s, t, 0]``),
    the input partitions it owns and the changelog partition its stores use."""

    task_name: str
    ssps: frozenset[SystemStreamPartition] = field(metadata={"wire": "system_stream_partitions"})
    changelog_partition: int


@dataclass(frozen=True)
class ContainerModel:
    """One container (a thread, a process or a Spark task) and the tasks it runs."""

    id: str
    tasks: dict[str, TaskModel]


@dataclass(frozen=True)
class JobModel:
    """Config plus containers → tasks → SSPs. ``version`` grows each time the job
    coordinator rebuilds the model from a changed coordinator stream. Its JSON (``to_dict``,
    served by the job coordinator) is the fields plus ``max_change_log_stream_partitions``."""

    config: Config
    containers: dict[str, ContainerModel]
    version: int = 1
    #: container id → host it last ran on (host affinity), from set-container-host-assignment
    previous_hosts: dict[str, str] = field(default_factory=dict)

    @property
    def max_change_log_stream_partitions(self) -> int:
        parts = [t.changelog_partition for c in self.containers.values() for t in c.tasks.values()]
        return max(parts) + 1 if parts else 0

    def all_tasks(self) -> dict[str, TaskModel]:
        return {name: t for c in self.containers.values() for name, t in c.tasks.items()}

    def wire_extras(self) -> dict[str, Any]:
        return {"max_change_log_stream_partitions": self.max_change_log_stream_partitions}

    def to_dict(self, mask_secrets: bool = True) -> dict[str, Any]:
        data = to_wire(self)
        if mask_secrets:
            data["config"] = mask_config(data["config"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobModel:
        return from_wire(cls, data)
