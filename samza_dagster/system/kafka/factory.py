"""KafkaSystemFactory: ``systems.<name>.samza.factory=kafka``."""

from __future__ import annotations

from samza_dagster.config.config import Config
from samza_dagster.system.kafka.admin import KafkaSystemAdmin
from samza_dagster.system.kafka.config import kafka_client_configs
from samza_dagster.system.kafka.consumer import KafkaSystemConsumer
from samza_dagster.system.kafka.producer import KafkaSystemProducer


class KafkaSystemFactory:
    """Builds the admin, consumer and producer of a Kafka system. Nothing connects here:
    each connects on start() (consumer, producer) or on its first call (admin), and fails
    within ``bootstrap.timeout.ms`` (5 s by default) with SystemUnavailableError when the
    brokers cannot be reached."""

    def get_admin(self, system_name: str, config: Config) -> KafkaSystemAdmin:
        return KafkaSystemAdmin(system_name, config, kafka_client_configs(system_name, config))

    def get_consumer(self, system_name: str, config: Config) -> KafkaSystemConsumer:
        return KafkaSystemConsumer(system_name, config, kafka_client_configs(system_name, config))

    def get_producer(self, system_name: str, config: Config) -> KafkaSystemProducer:
        return KafkaSystemProducer(system_name, config, kafka_client_configs(system_name, config))
