"""FilesSystemFactory: ``systems.<name>.samza.factory=files``."""

from __future__ import annotations

from samza_dagster.config.config import Config
from samza_dagster.system.files.admin import FilesSystemAdmin
from samza_dagster.system.files.consumer import FilesSystemConsumer
from samza_dagster.system.files.producer import FilesSystemProducer


class FilesSystemFactory:
    def get_admin(self, system_name: str, config: Config) -> FilesSystemAdmin:
        return FilesSystemAdmin(system_name, config)

    def get_consumer(self, system_name: str, config: Config) -> FilesSystemConsumer:
        return FilesSystemConsumer(system_name, config)

    def get_producer(self, system_name: str, config: Config) -> FilesSystemProducer:
        return FilesSystemProducer(system_name, config)
