"""Samza's metric group names: the Java class that owns the metrics, as Samza writes them into
a snapshot, so dashboards and tools made for Samza's metrics stream find them here too."""

CONTAINER_GROUP = "org.apache.samza.container.SamzaContainerMetrics"
TASK_GROUP = "org.apache.samza.container.TaskInstanceMetrics"
SYSTEM_CONSUMERS_GROUP = "org.apache.samza.system.SystemConsumersMetrics"
KAFKA_CONSUMER_GROUP = "org.apache.samza.system.kafka.KafkaSystemConsumerMetrics"
#: the embedded log has no Samza counterpart; its consumer metrics follow the Kafka ones' names
LOG_CONSUMER_GROUP = "samza_dagster.system.log.LogSystemConsumerMetrics"
STORE_GROUP = "org.apache.samza.storage.kv.KeyValueStoreMetrics"
CACHED_STORE_GROUP = "org.apache.samza.storage.kv.CachedStoreMetrics"
LOGGED_STORE_GROUP = "org.apache.samza.storage.kv.LoggedStoreMetrics"
STORAGE_MANAGER_GROUP = "org.apache.samza.storage.ContainerStorageManagerMetrics"
#: the operator runtime's counters (late messages, expired join entries) of a high-level job
OPERATOR_GROUP = "samza_dagster.operators.OperatorMetrics"


def consumer_group(factory: str) -> str:
    """The consumer-metrics group of a system by its ``systems.<name>.samza.factory`` value."""
    if factory == "kafka" or "kafka" in factory.lower():
        return KAFKA_CONSUMER_GROUP
    if factory == "log":
        return LOG_CONSUMER_GROUP
    return f"{factory}.SystemConsumerMetrics"


def partition_metric(system: str, stream: str, partition: int, name: str) -> str:
    """Samza's per-partition metric name: ``<system>-<stream>-<partition>-<name>``."""
    return f"{system}-{stream}-{partition}-{name}"
