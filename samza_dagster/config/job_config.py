"""Typed view over the ``job.*`` keys (defined in :mod:`samza_dagster.config.keys`)."""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.keys import GROUPERS, JOB_FACTORIES

__all__ = ["GROUPERS", "JOB_FACTORIES", "DEFAULT_SYSTEM", "JobConfig"]

DEFAULT_SYSTEM: str = keys.JOB_DEFAULT_SYSTEM.default


@dataclass(frozen=True)
class JobConfig:
    config: Config

    @property
    def name(self) -> str:
        return self.config.get_required(keys.JOB_NAME.name)

    @property
    def id(self) -> str:
        return keys.JOB_ID.get(self.config)

    @property
    def factory(self) -> str:
        return keys.JOB_FACTORY_CLASS.get(self.config)

    @property
    def container_count(self) -> int:
        return keys.JOB_CONTAINER_COUNT.get(self.config)

    @property
    def thread_pool_size(self) -> int:
        return keys.JOB_CONTAINER_THREAD_POOL_SIZE.get(self.config)

    @property
    def default_system(self) -> str:
        return keys.JOB_DEFAULT_SYSTEM.get(self.config)

    @property
    def coordinator_system(self) -> str:
        return keys.JOB_COORDINATOR_SYSTEM.get(self.config) or self.default_system

    @property
    def intermediate_stream_partitions(self) -> int | None:
        return keys.JOB_INTERMEDIATE_STREAM_PARTITIONS.get(self.config)

    @property
    def processing_guarantee(self) -> str:
        """``at-least-once`` (the default, Samza's) or ``exactly-once`` (container/exactly_once.py)."""
        return keys.JOB_PROCESSING_GUARANTEE.get(self.config)

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly-once"

    @property
    def grouper(self) -> str:
        return keys.JOB_GROUPER.get(self.config)
