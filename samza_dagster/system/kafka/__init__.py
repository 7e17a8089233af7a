"""The Kafka system on kafka-python (``systems.<name>.samza.factory=kafka``).

kafka-python is loaded when this package is imported; ``system/factories.py`` imports it only
for a system whose factory is ``kafka``, so jobs on the log system never load kafka-python.
"""

from samza_dagster.system.kafka.admin import KafkaSystemAdmin
from samza_dagster.system.kafka.config import KafkaClientConfigs, kafka_client_configs
from samza_dagster.system.kafka.consumer import KafkaSystemConsumer
from samza_dagster.system.kafka.errors import KafkaProducerError
from samza_dagster.system.kafka.factory import KafkaSystemFactory
from samza_dagster.system.kafka.producer import KafkaSystemProducer

__all__ = [
    "KafkaClientConfigs",
    "KafkaProducerError",
    "KafkaSystemAdmin",
    "KafkaSystemConsumer",
    "KafkaSystemFactory",
    "KafkaSystemProducer",
    "kafka_client_configs",
]
