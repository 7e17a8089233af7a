"""Typed view over the ``job.*`` keys."""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError

JOB_FACTORIES = ("thread", "process", "spark")
GROUPERS = ("group-by-partition", "group-by-system-stream-partition")
DEFAULT_SYSTEM = "log"
MAX_INFERRED_PARTITIONS = 256


@dataclass(frozen=True)
class JobConfig:
    config: Config

    @property
    def name(self) -> str:
        return self.config.get_required("job.name")

    @property
    def id(self) -> str:
        return self.config.get_str("job.id", "1") or "1"

    @property
    def factory(self) -> str:
        return self.config.get_choice("job.factory.class", JOB_FACTORIES, "spark") or "spark"

    @property
    def container_count(self) -> int:
        count = self.config.get_int("job.container.count", 1) or 1
        if count < 1:
            raise ConfigError(f"job.container.count must be at least 1, got {count}", key="job.container.count")
        return count

    @property
    def thread_pool_size(self) -> int:
        size = self.config.get_int("job.container.thread.pool.size", 0) or 0
        if size < 0:
            raise ConfigError(
                f"job.container.thread.pool.size must be >= 0, got {size}", key="job.container.thread.pool.size"
            )
        return size

    @property
    def default_system(self) -> str:
        return self.config.get_str("job.default.system") or DEFAULT_SYSTEM

    @property
    def coordinator_system(self) -> str:
        return self.config.get_str("job.coordinator.system") or self.default_system

    @property
    def intermediate_stream_partitions(self) -> int | None:
        return self.config.get_int("job.intermediate.stream.partitions")

    @property
    def grouper(self) -> str:
        return (
            self.config.get_choice("job.systemstreampartition.grouper.factory", GROUPERS, GROUPERS[0])
            or GROUPERS[0]
        )
