"""Reading a metrics stream back: every partition, each message decoded as a Samza snapshot,
and the latest snapshot per (container, source) — what the job coordinator's Prometheus
exposition and ``samza-dagster metrics`` show."""

from __future__ import annotations

import logging
import threading
import time

from samza_dagster.config.config import Config
from samza_dagster.metrics.errors import MetricsError
from samza_dagster.metrics.snapshot import MetricsSnapshot, MetricsSnapshotError
from samza_dagster.model import StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.factories import stop_admin, system_factory

log = logging.getLogger(__name__)


class LatestSnapshots:
    """The newest snapshot (by header ``time``) of each (container-name, source); safe to
    update from one thread and read from others.

    A container started again (a new JobModel, a Spark retry) reports with a new ``reset-time``
    and counts from 0: the last snapshot of each earlier reporter lifetime is kept
    (:meth:`ended`), so a reader can count over the whole run instead of since the restart."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str], MetricsSnapshot] = {}
        self._ended: list[MetricsSnapshot] = []
        self._lock = threading.Lock()

    def add(self, snapshot: MetricsSnapshot) -> None:
        key = (snapshot.header.container_name, snapshot.header.source)
        with self._lock:
            current = self._latest.get(key)
            if current is None or snapshot.header.time >= current.header.time:
                if current is not None and current.header.reset_time != snapshot.header.reset_time:
                    self._ended.append(current)
                self._latest[key] = snapshot

    def ended(self) -> list[MetricsSnapshot]:
        """The last snapshot of every reporter lifetime that a restart ended, oldest first."""
        with self._lock:
            return list(self._ended)

    def snapshots(self) -> list[MetricsSnapshot]:
        """Sorted by container and source."""
        with self._lock:
            return [self._latest[key] for key in sorted(self._latest)]

    def __len__(self) -> int:
        return len(self._latest)


class MetricsStreamReader:
    """A consumer over every partition of a metrics stream, from its oldest offsets
    (``from_start``) or from what follows its current head (only what is written from now on).
    Messages that are not snapshots are skipped with a WARNING naming their offset."""

    def __init__(self, config: Config, stream: SystemStream, *, from_start: bool = True) -> None:
        factory = system_factory(config, stream.system)
        self.stream = stream
        self.admin = factory.get_admin(stream.system, config)
        metadata = self.admin.get_system_stream_metadata([stream.stream])[stream.stream]
        #: per partition, the newest offset when the reader was made (None: it was empty)
        self.head: dict[SystemStreamPartition, str | None] = {}
        self._consumer = factory.get_consumer(stream.system, config)
        self.ssps: list[SystemStreamPartition] = []
        for partition, pm in sorted(metadata.partitions.items()):
            ssp = SystemStreamPartition(stream.system, stream.stream, partition)
            self.ssps.append(ssp)
            self.head[ssp] = pm.newest_offset
            self._consumer.register(ssp, pm.oldest_offset if from_start else pm.upcoming_offset)
        self._consumer.start()
        self._last: dict[SystemStreamPartition, str] = {}

    def poll(self, timeout_s: float) -> list[MetricsSnapshot]:
        result: list[MetricsSnapshot] = []
        for ssp, envelopes in self._consumer.poll(self.ssps, timeout_s).items():
            for envelope in envelopes:
                if envelope.is_end_of_stream:
                    continue
                self._last[ssp] = envelope.offset
                try:
                    result.append(MetricsSnapshot.decode(envelope.message))
                except (MetricsSnapshotError, TypeError) as exc:
                    log.warning(
                        "skipping a message that is not a metrics snapshot at %s.%s[%s] offset %s: %s",
                        ssp.system,
                        ssp.stream,
                        ssp.partition,
                        envelope.offset,
                        exc,
                    )
        return result

    def read_to_head(self, timeout_s: float = 30.0) -> list[MetricsSnapshot]:
        """Everything up to the head seen when the reader was made."""
        compare = self.admin.offset_comparator
        pending = {ssp for ssp, newest in self.head.items() if newest is not None}
        result: list[MetricsSnapshot] = []
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            result.extend(self.poll(0.2))
            pending = {
                ssp
                for ssp in pending
                if ssp not in self._last or compare(self._last[ssp], self.head[ssp]) < 0  # type: ignore[arg-type]
            }
        if pending:
            names = ", ".join(f"{s.stream}[{s.partition}]" for s in sorted(pending))
            raise MetricsError(
                f"metrics stream {self.stream.system}.{self.stream.stream}: partitions {names} "
                f"were not read to their head within {timeout_s:.0f} s"
            )
        return result

    def close(self) -> None:
        try:
            self._consumer.stop()
        finally:
            stop_admin(self.admin)

    def __enter__(self) -> MetricsStreamReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ensure_metrics_stream(config: Config, stream: SystemStream) -> None:
    """Create ``stream`` with one partition unless it exists (with any partition count)."""
    admin = system_factory(config, stream.system).get_admin(stream.system, config)
    try:
        try:
            admin.get_system_stream_metadata([stream.stream])
        except StreamNotFoundError:
            admin.create_stream(StreamSpec(stream.stream, stream.stream, stream.system, 1))
    finally:
        stop_admin(admin)


def latest_snapshots(config: Config, stream: SystemStream) -> LatestSnapshots:
    """The whole stream read once: the latest snapshot of each container and source."""
    latest = LatestSnapshots()
    with MetricsStreamReader(config, stream) as reader:
        for snapshot in reader.read_to_head():
            latest.add(snapshot)
    return latest


class MetricsStreamFollower:
    """Follows a metrics stream on a thread of its own from what is written after it starts,
    keeping :attr:`latest` current (the job coordinator's Prometheus exposition)."""

    def __init__(self, config: Config, stream: SystemStream) -> None:
        self.config = config
        self.stream = stream
        self.latest = LatestSnapshots()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._reader: MetricsStreamReader | None = None

    def start(self) -> None:
        """Returns once the follower reads from the stream's current head (created when missing),
        so nothing a container writes after this is missed; raises what stopped it from reading."""
        ensure_metrics_stream(self.config, self.stream)
        ready = threading.Event()
        failed: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(ready, failed), name=f"metrics-follower-{self.stream.stream}", daemon=True
        )
        self._thread.start()
        ready.wait(30)
        if failed:
            raise failed[0]

    def _run(self, ready: threading.Event, failed: list[BaseException]) -> None:
        # the reader is made on this thread: a system's consumer may be bound to its thread (SQLite)
        try:
            reader = self._reader = MetricsStreamReader(self.config, self.stream, from_start=False)
        except BaseException as exc:  # noqa: BLE001 - handed to start()
            failed.append(exc)
            ready.set()
            return
        ready.set()
        try:
            while not self._stopping.is_set():
                try:
                    for snapshot in reader.poll(0.2):
                        self.latest.add(snapshot)
                except Exception:  # noqa: BLE001 - keep serving what was read; retry
                    log.warning(
                        "reading metrics stream %s.%s failed", self.stream.system, self.stream.stream, exc_info=True
                    )
                    self._stopping.wait(1.0)
        finally:
            self._reader = None
            reader.close()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
