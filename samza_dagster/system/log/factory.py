"""LogSystemFactory: ``systems.<name>.samza.factory=log`` (also the default when none is set)."""

from __future__ import annotations

from samza_dagster.config.config import Config
from samza_dagster.system.log.admin import LogSystemAdmin
from samza_dagster.system.log.consumer import LogSystemConsumer
from samza_dagster.system.log.producer import LogSystemProducer


class LogSystemFactory:
    def supports_transactions(self, system_name: str, config: Config) -> bool:
        """Its producers run transactions (transactions.py): ``job.processing.guarantee=exactly-once``."""
        return True

    def get_admin(self, system_name: str, config: Config) -> LogSystemAdmin:
        return LogSystemAdmin(system_name, config)

    def get_consumer(self, system_name: str, config: Config) -> LogSystemConsumer:
        return LogSystemConsumer(system_name, config)

    def get_producer(self, system_name: str, config: Config) -> LogSystemProducer:
        return LogSystemProducer(system_name, config)
