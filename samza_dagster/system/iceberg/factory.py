"""IcebergSystemFactory: ``systems.<name>.samza.factory=iceberg`` — tables as outputs."""

from __future__ import annotations

from samza_dagster.config.config import Config
from samza_dagster.system.errors import SystemClientError
from samza_dagster.system.iceberg.admin import IcebergSystemAdmin
from samza_dagster.system.iceberg.producer import IcebergSystemProducer


class IcebergSystemFactory:
    def commits_with_checkpoints(self, system_name: str, config: Config) -> bool:
        """Its commits carry the job's checkpoints (producer.py), so it keeps exactly-once on its own."""
        return True

    def get_admin(self, system_name: str, config: Config) -> IcebergSystemAdmin:
        return IcebergSystemAdmin(system_name, config)

    def get_consumer(self, system_name: str, config: Config) -> IcebergSystemProducer:
        raise SystemClientError(
            f"system {system_name!r} (iceberg) is an output: its tables are read by batch tools "
            "(pyiceberg, Spark, DuckDB, the Dagster IO manager), not as an input stream"
        )

    def get_producer(self, system_name: str, config: Config) -> IcebergSystemProducer:
        return IcebergSystemProducer(system_name, config)
