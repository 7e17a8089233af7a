"""The Prometheus view of a job's metrics snapshots, through ``prometheus_client``.

Each numeric value of each latest snapshot becomes one sample: metric name ``samza_`` + the
Samza metric name with every character Prometheus does not allow replaced by ``_``
(``process-envelopes`` → ``samza_process_envelopes``), labels ``job``, ``job_id``,
``container``, ``source`` (``samza-container-0``, ``TaskName-Partition 0``) and ``group``
(Samza's group, ``org.apache.samza.container.SamzaContainerMetrics``). A snapshot does not say
whether a value was a counter or a gauge, so every family is a gauge — ``rate()`` works on them
as on counters. Lists (ListGauge) and non-numbers are left out; a bool is 0 or 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE  # the text format's Content-Type
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from samza_dagster.metrics.snapshot import MetricsSnapshot

__all__ = ["CONTENT_TYPE", "LABELS", "PREFIX", "SnapshotCollector", "exposition", "prometheus_name"]

PREFIX = "samza_"
LABELS = ("job", "job_id", "container", "source", "group")
_INVALID = re.compile(r"[^a-zA-Z0-9_:]")


def prometheus_name(samza_name: str) -> str:
    return PREFIX + _INVALID.sub("_", samza_name)


class SnapshotCollector:
    """A ``prometheus_client`` collector over the snapshots ``snapshots()`` returns at scrape time."""

    def __init__(self, snapshots: Callable[[], list[MetricsSnapshot]]) -> None:
        self._snapshots = snapshots

    def collect(self) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily] = {}
        for snapshot in self._snapshots():
            h = snapshot.header
            for group, values in sorted(snapshot.metrics.items()):
                for name, value in sorted(values.items()):
                    if isinstance(value, bool):
                        value = int(value)
                    if not isinstance(value, (int, float)):
                        continue
                    metric = prometheus_name(name)
                    family = families.get(metric)
                    if family is None:
                        family = families[metric] = GaugeMetricFamily(metric, f"Samza metric {name}", labels=LABELS)
                    family.add_metric([h.job_name, h.job_id, h.container_name, h.source, group], float(value))
        yield from families.values()


def exposition(snapshots: Callable[[], list[MetricsSnapshot]]) -> bytes:
    """The text exposition format of ``snapshots()``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshots))  # type: ignore[arg-type]
    return generate_latest(registry)
