"""The reporters a container runs (Samza's ``MetricsReporter``: ``register(source, registry)``,
``start()``, ``stop()``), and the snapshot reporter, which writes Samza's snapshot JSON of every
registered registry to a metrics stream every interval, in the form the stream's serde asks
(``MetricsSnapshotSerde`` JSON or ``MetricsSnapshotSerdeV2``; ``metrics/config.py``).

The snapshot reporter has a producer of its own, used from its own thread only: the run loop's
producers are never touched from another thread, and a slow metrics system cannot stall a
commit. It reports once when it starts (as Samza's reporter, whose first run has no delay), then
every interval, and once more when it stops, so the last snapshot of a container holds its
final counts — what a bounded job's last message left.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from samza_dagster import __version__
from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.metrics.config import MetricsConfig, ReporterConfig, snapshot_form
from samza_dagster.metrics.registry import MetricsRegistry
from samza_dagster.metrics.snapshot import MetricsHeader, MetricsSnapshot
from samza_dagster.metrics.stream_reader import ensure_metrics_stream
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.factories import system_factory

log = logging.getLogger(__name__)

#: Samza's environment variables for the header (ShellCommandConfig, EnvironmentVariables)
EXECUTION_ENV_CONTAINER_ID = "EXECUTION_ENV_CONTAINER_ID"
SAMZA_EPOCH_ID = "SAMZA_EPOCH_ID"


class MetricsReporter(Protocol):
    """What a ``module:Class`` reporter implements; the class is called as
    ``Class(name, container_name, config)``, as Samza's ``MetricsReporterFactory`` is asked."""

    def register(self, source: str, registry: MetricsRegistry) -> None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class SnapshotReporter:
    """Writes a :class:`MetricsSnapshot` of each registered registry to ``stream`` every
    ``interval_s`` seconds; the message key is the container name, so one container's
    snapshots stay in order on one partition."""

    def __init__(
        self,
        config: Config,
        container_name: str,
        stream: SystemStream,
        interval_s: float,
        *,
        host: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        job = JobConfig(config)
        self.config = config
        self.stream = stream
        self.interval_s = interval_s
        self.container_name = container_name
        self._job_name, self._job_id = job.name, job.id
        self._host = host or socket.gethostname()
        self._version = keys.APP_VERSION.get(config)  # Samza's job version in the header
        # as Samza's MetricsSnapshotReporter: from its environment variables, "" when unset
        self._exec_env_container_id = os.environ.get(EXECUTION_ENV_CONTAINER_ID, "")
        self._samza_epoch_id = os.environ.get(SAMZA_EPOCH_ID, "")
        self.form = snapshot_form(config, stream)
        self._clock = clock
        self._reset_ms = int(clock() * 1000)
        self._registries: list[tuple[str, MetricsRegistry]] = []
        self._source = f"metrics-{container_name}"
        self._producer: Any = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.reports = 0

    def register(self, source: str, registry: MetricsRegistry) -> None:
        self._registries.append((source, registry))

    def start(self) -> None:
        factory = system_factory(self.config, self.stream.system)
        ensure_metrics_stream(self.config, self.stream)
        producer = factory.get_producer(self.stream.system, self.config)
        producer.register(self._source)
        producer.start()
        self._producer = producer
        self._thread = threading.Thread(
            target=self._run, name=f"metrics-snapshot-{self.container_name}-{self.stream.stream}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """The final snapshot, then the producer is flushed and stopped."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if self._producer is not None:
            try:
                self.report()
            finally:
                self._producer.stop()
                self._producer = None

    def _run(self) -> None:
        while True:
            try:
                self.report()
            except Exception:  # noqa: BLE001 - metrics must never fail the job; the next interval retries
                log.warning("metrics snapshot to %s.%s failed", self.stream.system, self.stream.stream, exc_info=True)
            if self._stopping.wait(self.interval_s):
                return

    def report(self) -> None:
        """One snapshot per registered source, sent and flushed."""
        producer = self._producer
        if producer is None:
            return
        key = self.container_name.encode("utf-8")
        for source, registry in list(self._registries):
            snapshot = MetricsSnapshot(self._header(source), registry.snapshot(), registry.kinds())
            data = snapshot.encode(self.form)
            producer.send(self._source, OutgoingMessageEnvelope(self.stream, data, key=key))
        producer.flush(self._source)
        self.reports += 1

    def _header(self, source: str) -> MetricsHeader:
        return MetricsHeader(
            job_name=self._job_name,
            job_id=self._job_id,
            container_name=self.container_name,
            source=source,
            host=self._host,
            time=int(self._clock() * 1000),
            reset_time=self._reset_ms,
            version=self._version,
            samza_version=__version__,
            exec_env_container_id=self._exec_env_container_id,
            samza_epoch_id=self._samza_epoch_id,
        )


def container_reporters(metrics: MetricsConfig, config: Config, container_name: str) -> list[Any]:
    """The reporters one container runs: a snapshot reporter per metrics stream (the Prometheus
    reporter's stream included: the job coordinator serves what containers write there) and
    each custom reporter."""
    from samza_dagster.serde.registry import load_class

    reporters: list[Any] = [
        SnapshotReporter(config, container_name, stream, interval)
        for stream, interval in metrics.snapshot_streams.items()
    ]
    for reporter in metrics.custom:
        reporters.append(_custom(reporter, config, container_name, load_class))
    return reporters


def _custom(
    reporter: ReporterConfig, config: Config, container_name: str, load_class: Callable[[str, str], type]
) -> Any:
    cls = load_class(reporter.class_path or "", keys.METRICS_REPORTER_CLASS.key(name=reporter.name))
    return cls(reporter.name, container_name, config)
