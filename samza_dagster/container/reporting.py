"""A container's metrics reporting: the engine's metrics registered in the container's registry
(SamzaContainerMetrics, SystemConsumersMetrics, the consumers' lag), and the reporters
``metrics.reporters`` configures, started once the run loop exists and stopped — after one last
snapshot with the final counts — when the container shuts down."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.config.system_config import SystemConfig
from samza_dagster.container.metrics import ConsumerLag, ContainerMetrics, register_container_metrics
from samza_dagster.container.task_instance import TaskInstance
from samza_dagster.metrics.config import MetricsConfig, metrics_config
from samza_dagster.metrics.groups import consumer_group
from samza_dagster.metrics.registry import MetricsRegistry, container_source
from samza_dagster.metrics.reporter import container_reporters
from samza_dagster.metrics.snapshot import plain
from samza_dagster.model import SystemStreamPartition

log = logging.getLogger(__name__)


class ContainerReporting:
    def __init__(self, config: Config, container_id: str) -> None:
        self.config = config
        self.container_id = container_id
        #: parsed when the container is made: a bad reporter config fails before anything starts
        self.metrics_config: MetricsConfig = metrics_config(config)
        self.registry = MetricsRegistry(container_source(container_id))
        self.reporters: list[Any] = []
        self._lag: ConsumerLag | None = None
        self._task_registries: list[MetricsRegistry] = []
        #: the registries' values when the container stopped (its summary carries them)
        self.final: dict[str, dict[str, dict[str, Any]]] = {}
        #: messages behind per input partition (``system.stream[p]``) as the final snapshot
        #: computed it: the summary's lag, looked up once at the stop, not twice
        self.final_lag: dict[str, int] = {}

    def start(
        self,
        tasks: dict[str, TaskInstance],
        consumers: Any,
        container_metrics: ContainerMetrics,
        new_admin: Callable[[str], Any],
        restored: dict[str, int] | None = None,
        starting: dict[SystemStreamPartition, str] | None = None,
    ) -> None:
        """Register the engine's metrics, then start every reporter over the container's and
        each task's registry. ``starting``: where each input partition is read from."""
        register_container_metrics(
            self.registry,
            container_metrics,
            [ti.metrics for ti in tasks.values()],
            consumers,
            time.monotonic,
            restored,
        )
        owners = {ssp: ti.last_processed for ti in tasks.values() for ssp in ti.ssps}
        systems = SystemConfig(self.config)
        self._lag = ConsumerLag(
            self.registry, owners, new_admin, lambda s: consumer_group(systems.factory(s) or "log"), starting
        )
        self._task_registries = [tasks[name].metrics_registry for name in sorted(tasks)]
        for reporter in container_reporters(self.metrics_config, self.config, self.container_id):
            reporter.register(self.registry.source, self.registry)
            for registry in self._task_registries:
                reporter.register(registry.source, registry)
            reporter.start()
            self.reporters.append(reporter)

    def stop(self) -> None:
        """Each reporter's last snapshot and stop; errors are logged, never raised (metrics must
        not turn a clean shutdown into a failure)."""
        for reporter in self.reporters:
            try:
                reporter.stop()
            except Exception:  # noqa: BLE001 - see the docstring
                log.warning(
                    "container %s: metrics reporter %r failed to stop", self.container_id, reporter, exc_info=True
                )
        self.reporters = []
        try:  # after the reporters' last snapshots: a timer's mean is not split between them
            self.final = {source: plain(metrics) for source, metrics in self.snapshots().items()}
        except Exception:  # noqa: BLE001 - informational
            log.debug("container %s: final metrics snapshot failed", self.container_id, exc_info=True)
        if self._lag is not None:
            self.final_lag = {
                f"{ssp.system}.{ssp.stream}[{ssp.partition}]": behind
                for ssp, behind in sorted(self._lag.behind.items())
            }
            try:
                self._lag.close()
            except Exception:  # noqa: BLE001 - best effort
                log.debug("closing the lag admins failed", exc_info=True)
            self._lag = None

    def snapshots(self) -> dict[str, dict[str, dict[str, Any]]]:
        """source → group → name → value of the container's and every task's registry."""
        registries = [self.registry, *self._task_registries]
        return {registry.source: registry.snapshot() for registry in registries}
