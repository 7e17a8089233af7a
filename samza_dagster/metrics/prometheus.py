"""The Prometheus view of a job's metrics snapshots, through ``prometheus_client``, by
Prometheus' naming conventions — what PromQL users query by:

* **counters are counters**: ``samza_process_envelopes_total`` (``# TYPE ... counter``), so
  ``rate()`` means what it says; a gauge stays a gauge (``samza_unprocessed_messages``);
* **base units**: Samza's timers (mean ns since the previous snapshot) are ``..._seconds``
  (``samza_process_seconds``), ``physical-memory-mb`` is ``samza_physical_memory_bytes``,
  ``event-loop-utilization`` a ``_ratio``;
* **labels, not names**: the partition a Samza name carries is ``system``, ``stream`` and
  ``partition`` (``log-words-0-messages-processed`` is
  ``samza_messages_processed_total{system="log",stream="words",partition="0"}``), a store's
  name ``store``, an operator's id ``operator``; every sample also has ``job``, ``job_id``,
  ``container``, ``task`` (empty for the container's own metrics), ``source`` and ``group``;
* **HELP** says what each family counts (:mod:`.catalog`).

The engine's metrics are described by :mod:`.catalog`; a task's own by the kind its snapshot
recorded (``types``): a counter is ``samza_<name>_total``, a timer ``samza_<name>_seconds``
(a ``-ns`` suffix dropped), anything else a gauge ``samza_<name>``. Lists (ListGauge) and
values that are not numbers are left out; a bool is 0 or 1, an offset given as a string of
digits its number.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE  # the text format's Content-Type
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from samza_dagster.metrics.catalog import COUNTER, MetricInfo, describe
from samza_dagster.metrics.snapshot import MetricsSnapshot

__all__ = ["CONTENT_TYPE", "LABELS", "PREFIX", "SnapshotCollector", "exposition", "prometheus_name"]

log = logging.getLogger(__name__)

PREFIX = "samza_"
LABELS = ("job", "job_id", "container", "task", "source", "group")
_TASK_SOURCE = "TaskName-"
#: families a clash was reported for (once per process: a scrape builds a new collector)
_CLASHES: set[str] = set()


def prometheus_name(info: MetricInfo) -> str:
    """The family name: ``samza_`` + family + unit (a counter's samples add ``_total``)."""
    return PREFIX + info.family + (f"_{info.unit}" if info.unit else "")


class SnapshotCollector:
    """A ``prometheus_client`` collector over the snapshots ``snapshots()`` returns at scrape
    time; ``systems`` are the job's system names (to split ``<system>-<stream>`` names)."""

    def __init__(self, snapshots: Callable[[], list[MetricsSnapshot]], systems: Iterable[str] = ()) -> None:
        self._snapshots = snapshots
        self._systems = tuple(systems)

    def collect(self) -> Iterator[Metric]:
        families: dict[str, tuple[Metric, tuple[str, ...]]] = {}
        for snapshot in self._snapshots():
            h = snapshot.header
            task = h.source[len(_TASK_SOURCE) :] if h.source.startswith(_TASK_SOURCE) else ""
            base = (h.job_name, h.job_id, h.container_name, task, h.source)
            for group, values in sorted(snapshot.metrics.items()):
                for name, raw in sorted(values.items()):
                    value = _number(raw)
                    if value is None:
                        continue
                    info = describe(group, name, snapshot.kind(group, name), self._systems)
                    metric = prometheus_name(info)
                    labels = tuple(info.labels)
                    entry = families.get(metric)
                    if entry is None:
                        family_type = CounterMetricFamily if info.kind == COUNTER else GaugeMetricFamily
                        entry = families[metric] = (family_type(metric, info.help, labels=[*LABELS, *labels]), labels)
                    family, family_labels = entry
                    if family_labels != labels or (family.type == "counter") != (info.kind == COUNTER):
                        self._clash(metric, group, name)
                        continue
                    family.add_metric([*base, group, *info.labels.values()], value * info.scale)  # type: ignore[attr-defined]
        yield from (family for family, _ in families.values())

    def _clash(self, metric: str, group: str, name: str) -> None:
        """Two metrics that map to one family of different kinds or labels (a task's own metric
        named like an engine one): the later is left out, said once."""
        if metric not in _CLASHES:
            _CLASHES.add(metric)
            log.warning(
                "metric %s/%s is not exported to Prometheus: %s is already a family of another kind or labels",
                group,
                name,
                metric,
            )


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.lstrip("-").isdigit():  # an offset, kept a string as Samza does
        return float(value)
    return None


def exposition(snapshots: Callable[[], list[MetricsSnapshot]], systems: Iterable[str] = ()) -> bytes:
    """The text exposition format of ``snapshots()``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshots, systems))  # type: ignore[arg-type]
    return generate_latest(registry)
