"""The JobModel: a job's containers, their tasks, each task's input partitions and
changelog partition, and the config they run with (Samza design)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.model import SystemStreamPartition


@dataclass(frozen=True)
class TaskModel:
    """One task: its Samza task name (``Partition 0`` or ``SystemStreamPartition [s, t, 0]``),
    the input partitions it owns and the changelog partition its stores use."""

    task_name: str
    ssps: frozenset[SystemStreamPartition]
    changelog_partition: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_name": self.task_name,
            "system_stream_partitions": [
                {"system": s.system, "stream": s.stream, "partition": s.partition}
                for s in sorted(self.ssps)
            ],
            "changelog_partition": self.changelog_partition,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskModel:
        ssps = frozenset(
            SystemStreamPartition(d["system"], d["stream"], int(d["partition"]))
            for d in data["system_stream_partitions"]
        )
        return cls(data["task_name"], ssps, int(data["changelog_partition"]))


@dataclass(frozen=True)
class ContainerModel:
    """One container (a thread, a process or a Spark task) and the tasks it runs."""

    id: str
    tasks: dict[str, TaskModel]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tasks": {name: t.to_dict() for name, t in sorted(self.tasks.items())}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContainerModel:
        return cls(str(data["id"]), {name: TaskModel.from_dict(t) for name, t in data["tasks"].items()})


@dataclass(frozen=True)
class JobModel:
    """Config plus containers → tasks → SSPs. ``version`` grows each time the job
    coordinator rebuilds the model from a changed coordinator stream."""

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

    def to_dict(self, mask_secrets: bool = True) -> dict[str, Any]:
        config = dict(self.config)
        if mask_secrets:
            from samza_dagster.config.secrets import mask_config

            config = mask_config(config)
        return {
            "version": self.version,
            "config": config,
            "containers": {cid: c.to_dict() for cid, c in sorted(self.containers.items())},
            "max_change_log_stream_partitions": self.max_change_log_stream_partitions,
            "previous_hosts": dict(self.previous_hosts),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobModel:
        return cls(
            config=Config(data["config"]),
            containers={cid: ContainerModel.from_dict(c) for cid, c in data["containers"].items()},
            version=int(data.get("version", 1)),
            previous_hosts=dict(data.get("previous_hosts", {})),
        )
