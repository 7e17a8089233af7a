"""Samza's metrics: a MetricsRegistry of Counter, Gauge, Timer and ListGauge, grouped as Samza
groups them; the snapshot JSON that reporters write to a metrics stream; the reporters chosen by
``metrics.reporters``; and the Prometheus view of a job's snapshots."""

from samza_dagster.metrics.groups import (
    CACHED_STORE_GROUP,
    CONTAINER_GROUP,
    LOGGED_STORE_GROUP,
    STORAGE_MANAGER_GROUP,
    LOG_CONSUMER_GROUP,
    KAFKA_CONSUMER_GROUP,
    STORE_GROUP,
    SYSTEM_CONSUMERS_GROUP,
    TASK_GROUP,
)
from samza_dagster.metrics.registry import MetricsRegistry
from samza_dagster.metrics.snapshot import MetricsHeader, MetricsSnapshot, MetricsSnapshotError
from samza_dagster.metrics.types import Counter, Gauge, ListGauge, Metric, Timer

__all__ = [
    "CACHED_STORE_GROUP",
    "CONTAINER_GROUP",
    "LOGGED_STORE_GROUP",
    "STORAGE_MANAGER_GROUP",
    "Counter",
    "Gauge",
    "KAFKA_CONSUMER_GROUP",
    "LOG_CONSUMER_GROUP",
    "ListGauge",
    "Metric",
    "MetricsHeader",
    "MetricsRegistry",
    "MetricsSnapshot",
    "MetricsSnapshotError",
    "STORE_GROUP",
    "SYSTEM_CONSUMERS_GROUP",
    "TASK_GROUP",
    "Timer",
]
