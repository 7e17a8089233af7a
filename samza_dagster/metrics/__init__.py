"""Samza's metrics: a MetricsRegistry of Counter, Gauge, Timer and ListGauge, grouped as Samza
groups them; the snapshot JSON that reporters write to a metrics stream; the reporters chosen by
``metrics.reporters``; and the Prometheus view of a job's snapshots."""

from importlib import import_module

from samza_dagster.metrics.groups import (
    CACHED_STORE_GROUP,
    CONTAINER_GROUP,
    KAFKA_CONSUMER_GROUP,
    LOG_CONSUMER_GROUP,
    LOGGED_STORE_GROUP,
    STORAGE_MANAGER_GROUP,
    STORE_GROUP,
    SYSTEM_CONSUMERS_GROUP,
    TASK_GROUP,
)
from samza_dagster.metrics.registry import MetricsRegistry
from samza_dagster.metrics.snapshot import MetricsHeader, MetricsSnapshot, MetricsSnapshotError
from samza_dagster.metrics.types import Counter, Gauge, ListGauge, Metric, Timer

#: Names loaded on first use: reading a metrics stream back pulls in the systems.
_LAZY = {"latest_snapshots": "stream_reader", "MetricsStreamReader": "stream_reader"}

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
    *_LAZY,
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(import_module(f"samza_dagster.metrics.{module}"), name)
