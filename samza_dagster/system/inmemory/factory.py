"""InMemorySystemFactory: ``systems.<name>.samza.factory=inmemory``."""

from __future__ import annotations

from samza_dagster.config.config import Config
from samza_dagster.system.inmemory.admin import InMemorySystemAdmin
from samza_dagster.system.inmemory.consumer import InMemorySystemConsumer
from samza_dagster.system.inmemory.producer import InMemorySystemProducer
from samza_dagster.system.inmemory.state import reset


class InMemorySystemFactory:
    """Admins, consumers and producers of a system share its streams process-wide."""

    def get_admin(self, system_name: str, config: Config) -> InMemorySystemAdmin:
        return InMemorySystemAdmin(system_name)

    def get_consumer(self, system_name: str, config: Config) -> InMemorySystemConsumer:
        return InMemorySystemConsumer(system_name, config)

    def get_producer(self, system_name: str, config: Config) -> InMemorySystemProducer:
        return InMemorySystemProducer(system_name, config)

    @staticmethod
    def reset(system_name: str | None = None) -> None:
        """Drop the streams of ``system_name`` (or of every in-memory system), for tests."""
        reset(system_name)
