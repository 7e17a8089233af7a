"""KafkaSystemFactory: ``systems.<name>.samza.factory=kafka``.

The consumer and producer run on the client ``systems.<name>.kafka.client`` names —
``confluent`` (librdkafka, the default) or ``kafka-python``; the admin is kafka-python's.
"""

from __future__ import annotations

from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.system.kafka.admin import KafkaSystemAdmin
from samza_dagster.system.kafka.config import kafka_client, kafka_client_configs


class KafkaSystemFactory:
    """Builds the admin, consumer and producer of a Kafka system. Nothing connects here:
    each connects on start() (consumer, producer) or on its first call (admin), and fails
    within ``bootstrap.timeout.ms`` (5 s by default) with SystemUnavailableError when the
    brokers cannot be reached."""

    def supports_transactions(self, system_name: str, config: Config) -> bool:
        """``job.processing.guarantee=exactly-once`` runs on either client's transactional producer."""
        return True

    def get_admin(self, system_name: str, config: Config) -> KafkaSystemAdmin:
        return KafkaSystemAdmin(system_name, config, kafka_client_configs(system_name, config))

    def get_consumer(self, system_name: str, config: Config) -> Any:
        if kafka_client(system_name, config) == "confluent":
            from samza_dagster.system.kafka.confluent_config import confluent_configs
            from samza_dagster.system.kafka.confluent_consumer import ConfluentSystemConsumer

            return ConfluentSystemConsumer(system_name, config, confluent_configs(system_name, config))
        # the chosen client's modules (and library) load only for that client
        from samza_dagster.system.kafka.consumer import KafkaSystemConsumer

        return KafkaSystemConsumer(system_name, config, kafka_client_configs(system_name, config))

    def get_producer(self, system_name: str, config: Config) -> Any:
        if kafka_client(system_name, config) == "confluent":
            from samza_dagster.system.kafka.confluent_config import confluent_configs
            from samza_dagster.system.kafka.confluent_producer import ConfluentSystemProducer

            return ConfluentSystemProducer(system_name, config, confluent_configs(system_name, config))
        from samza_dagster.system.kafka.producer import KafkaSystemProducer

        return KafkaSystemProducer(system_name, config, kafka_client_configs(system_name, config))
