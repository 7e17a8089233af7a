"""Dagster resources of samza_dagster: where the systems live, the Kafka admin, the Spark
session and the coordinator stream. Each is a ``dagster.ConfigurableResource``: bind it in your
``Definitions`` (or let :class:`~samza_dagster.orchestration.SamzaJobComponent` bind the
defaults) and override its fields in the launchpad; ops, sensors and checks take them as typed
parameters named by their resource key (``samza_systems``, ``spark``, ``kafka_admin``,
``coordinator_stream``)."""

from samza_dagster.orchestration.resources.coordinator import CoordinatorStreamResource
from samza_dagster.orchestration.resources.kafka_admin import KafkaAdminResource
from samza_dagster.orchestration.resources.spark import SparkResource
from samza_dagster.orchestration.resources.systems import SamzaSystemsResource

__all__ = ["CoordinatorStreamResource", "KafkaAdminResource", "SamzaSystemsResource", "SparkResource"]
