"""MetricsRegistry (Samza's ``MetricsRegistryMap``): metrics by group and name, one registry per
*source* — the container (``samza-container-<id>``) and each task (``TaskName-<task>``), as
Samza keeps them — and the group → name → value snapshot every reporter reads."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from samza_dagster.metrics.errors import MetricsError
from samza_dagster.metrics.types import Counter, Gauge, ListGauge, Metric, Timer

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Metric)


def container_source(container_id: str) -> str:
    return f"samza-container-{container_id}"


def task_source(task_name: str) -> str:
    return f"TaskName-{task_name}"


class MetricsRegistry:
    """``new_counter(group, name)`` and friends return the metric already registered under that
    group and name (as Samza's registry does), so code run again — a task's ``init`` after a
    restart — finds its counter instead of resetting it. Registering is rare and may come from
    any thread (a lock); updating a metric takes no lock."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.groups: dict[str, dict[str, Metric]] = {}
        self._lock = threading.Lock()
        self._before_snapshot: list[Callable[[], None]] = []

    # -- registering (Samza's names) --------------------------------------------------------
    def new_counter(self, group: str, name: str) -> Counter:
        return self._register(group, Counter(name))

    def new_gauge(self, group: str, name: str, default: Any = 0) -> Gauge:
        return self._register(group, Gauge(name, default))

    def new_timer(self, group: str, name: str) -> Timer:
        return self._register(group, Timer(name))

    def new_list_gauge(self, group: str, name: str, max_items: int = 100) -> ListGauge:
        return self._register(group, ListGauge(name, max_items))

    def computed_gauge(self, group: str, name: str, fn: Callable[[], Any]) -> Gauge:
        """A gauge whose value ``fn`` computes at each snapshot (the engine's own metrics)."""
        return self._register(group, Gauge(name, fn=fn))

    def computed_timer(self, group: str, name: str, totals: Callable[[], tuple[float, int]]) -> Timer:
        """A timer over cumulative ``(total_ns, count)`` its owner keeps (see :class:`Timer`)."""
        return self._register(group, Timer(name, totals))

    def before_snapshot(self, refresh: Callable[[], None]) -> None:
        """Run ``refresh`` before each snapshot (one batched lookup that several gauges read)."""
        with self._lock:
            self._before_snapshot.append(refresh)

    def _register(self, group: str, metric: M) -> M:
        with self._lock:
            metrics = self.groups.setdefault(group, {})
            existing = metrics.get(metric.name)
            if existing is None:
                metrics[metric.name] = metric
                return metric
        if type(existing) is not type(metric):
            raise MetricsError(
                f"metric {group}/{metric.name} of {self.source} is a {type(existing).__name__}; "
                f"it cannot be registered again as a {type(metric).__name__}"
            )
        return existing  # type: ignore[return-value]

    # -- reading -----------------------------------------------------------------------------
    def get(self, group: str, name: str) -> Metric | None:
        return self.groups.get(group, {}).get(name)

    def kinds(self) -> dict[str, dict[str, str]]:
        """group → name → kind of every counter and timer (a gauge is what is not listed): what
        a snapshot's ``types`` records."""
        with self._lock:
            groups = [(group, list(metrics.values())) for group, metrics in self.groups.items()]
        out: dict[str, dict[str, str]] = {}
        for group, metrics in groups:
            kinds = {m.name: m.kind for m in metrics if m.kind in ("counter", "timer")}
            if kinds:
                out[group] = kinds
        return out

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """group → name → value. A computed metric whose function fails is left out of this
        snapshot (logged at DEBUG): one broken gauge must not silence the rest."""
        with self._lock:
            refreshes = list(self._before_snapshot)
            groups = [(group, list(metrics.values())) for group, metrics in self.groups.items()]
        for refresh in refreshes:
            try:
                refresh()
            except Exception:  # noqa: BLE001 - the gauges keep their previous values
                log.debug("metrics refresh of %s failed", self.source, exc_info=True)
        result: dict[str, dict[str, Any]] = {}
        for group, metrics in groups:
            values: dict[str, Any] = {}
            for metric in metrics:
                try:
                    values[metric.name] = metric.value()
                except Exception:  # noqa: BLE001 - see the docstring
                    log.debug("metric %s/%s of %s failed", group, metric.name, self.source, exc_info=True)
            result[group] = values
        return result
