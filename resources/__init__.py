"""Dagster resources of samza_dagster: where the systems live, the Kafka admin, the Spark
session and the coordinator stream. Each is a ``dagster.ConfigurableResource``, so it is set in
``definitions.py`` (from environment variables) or overridden in the launchpad."""

from resources.coordinator import CoordinatorStreamResource
from resources.kafka_admin import KafkaAdminResource
from resources.spark import SparkResource
from resources.systems import SamzaSystemsResource

__all__ = ["CoordinatorStreamResource", "KafkaAdminResource", "SamzaSystemsResource", "SparkResource"]
