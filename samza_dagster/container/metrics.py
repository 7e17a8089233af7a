"""Per-task and per-container metrics: plain counters on the hot path, a snapshot dict
for logs and the run summary — and the same counters registered, with Samza's names and
groups, in the container's and each task's MetricsRegistry (what reporters read)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

from samza_dagster.metrics.groups import (
    CACHED_STORE_GROUP,
    CONTAINER_GROUP,
    LOGGED_STORE_GROUP,
    OPERATOR_GROUP,
    STORAGE_MANAGER_GROUP,
    SYSTEM_CONSUMERS_GROUP,
    TASK_GROUP,
    partition_metric,
)
from samza_dagster.metrics.registry import MetricsRegistry
from samza_dagster.model import SystemStreamPartition
from samza_dagster.system.factories import stop_admin


class TaskMetrics:
    __slots__ = (
        "task_name",
        "processed",  # per SSP: envelopes processed (control messages and dropped ones included)
        "process_s",
        "batch_count",  # process_batch calls (batch tasks)
        "window_count",
        "window_s",
        "commit_count",
        "commit_s",
        "deserialization_errors_dropped",
        "deserialization_errors_dead_lettered",  # sent to task.dlq.stream and skipped
        "control_messages",
        "end_of_stream_ssps",
        "counters",  # name -> int: counters a task adds (e.g. the operator runtime's late_messages)
    )

    def __init__(self, task_name: str, ssps: frozenset[SystemStreamPartition]) -> None:
        self.task_name = task_name
        self.processed: dict[SystemStreamPartition, int] = {ssp: 0 for ssp in ssps}
        self.process_s = 0.0
        self.batch_count = 0
        self.window_count = 0
        self.window_s = 0.0
        self.commit_count = 0
        self.commit_s = 0.0
        self.deserialization_errors_dropped = 0
        self.deserialization_errors_dead_lettered = 0
        self.control_messages = 0
        self.end_of_stream_ssps = 0
        #: free-form counters owned by the task; snapshot() copies them into the summary
        self.counters: dict[str, int] = {}

    @property
    def envelopes_processed(self) -> int:
        return sum(self.processed.values())

    def snapshot(self) -> dict[str, Any]:
        return {
            "envelopes_processed": self.envelopes_processed,
            "process_s": round(self.process_s, 6),
            "batch_count": self.batch_count,
            "window_count": self.window_count,
            "window_s": round(self.window_s, 6),
            "commit_count": self.commit_count,
            "commit_s": round(self.commit_s, 6),
            "deserialization_errors_dropped": self.deserialization_errors_dropped,
            "deserialization_errors_dead_lettered": self.deserialization_errors_dead_lettered,
            "control_messages": self.control_messages,
            "end_of_stream_ssps": self.end_of_stream_ssps,
            "counters": dict(self.counters),
        }


class ContainerMetrics:
    __slots__ = (
        "container_id",
        "chooses",
        "null_chooses",
        "blocked_waits",
        "started_at",
        "ended_at",
        "start_s",
        "shutdown_s",
        "commit_started_at",
        "commit_step",
    )

    def __init__(self, container_id: str) -> None:
        self.container_id = container_id
        self.chooses = 0
        self.null_chooses = 0
        self.blocked_waits = 0
        self.started_at = 0.0
        self.ended_at = 0.0
        #: seconds spent starting (metadata, checkpoints, stores, tasks, consumers) and shutting
        #: down (final commit excluded: the run loop does it; consumers, tasks, producers stopped)
        self.start_s = 0.0
        self.shutdown_s = 0.0
        #: when the commit in progress began (0.0: none is) and the step it is at: a commit that
        #: lasts is a system that does not answer (brokers down), what the job's stall reports
        self.commit_started_at = 0.0
        self.commit_step = ""

    def commit_waiting_s(self, now: float) -> float:
        """How long the commit in progress has lasted (0 when none is); any thread."""
        started = self.commit_started_at
        return now - started if started else 0.0

    def snapshot(self) -> dict[str, Any]:
        return {
            "chooses": self.chooses,
            "null_chooses": self.null_chooses,
            "blocked_waits": self.blocked_waits,
            "start_s": round(self.start_s, 6),
            "shutdown_s": round(self.shutdown_s, 6),
        }


# -- the same counters in Samza's registries --------------------------------------------------
# The hot path keeps updating the plain fields above; these computed metrics read them when a
# reporter takes a snapshot, so exporting costs the per-message path nothing.

_NS = 1_000_000_000


def register_task_metrics(
    registry: MetricsRegistry, metrics: TaskMetrics, last_processed: dict[SystemStreamPartition, str]
) -> None:
    """Samza's TaskInstanceMetrics of one task, in the task's own registry."""
    group = TASK_GROUP
    gauge = registry.computed_gauge
    gauge(group, "process-calls", lambda: metrics.envelopes_processed)
    gauge(
        group,
        "messages-actually-processed",
        lambda: (
            metrics.envelopes_processed
            - metrics.control_messages
            - metrics.deserialization_errors_dropped
            - metrics.deserialization_errors_dead_lettered
        ),
    )
    gauge(group, "process-batch-calls", lambda: metrics.batch_count)
    gauge(group, "window-calls", lambda: metrics.window_count)
    gauge(group, "commit-calls", lambda: metrics.commit_count)
    gauge(group, "control-messages", lambda: metrics.control_messages)
    gauge(group, "deserialization-errors-dropped", lambda: metrics.deserialization_errors_dropped)
    gauge(group, "deserialization-errors-dead-lettered", lambda: metrics.deserialization_errors_dead_lettered)
    gauge(group, "end-of-stream-partitions", lambda: metrics.end_of_stream_ssps)
    registry.computed_timer(group, "process-ns", lambda: (metrics.process_s * _NS, metrics.envelopes_processed))
    for ssp in sorted(metrics.processed):
        gauge(
            group, partition_metric(ssp.system, ssp.stream, ssp.partition, "offset"), partial(last_processed.get, ssp)
        )
        gauge(
            group,
            partition_metric(ssp.system, ssp.stream, ssp.partition, "messages-processed"),
            partial(metrics.processed.__getitem__, ssp),
        )

    def operator_counters() -> None:  # counters the operator runtime adds as operators start
        for name in list(metrics.counters):
            registry.computed_gauge(OPERATOR_GROUP, name, partial(metrics.counters.get, name, 0))

    registry.before_snapshot(operator_counters)


def _cache_gets(cached: Any) -> int:
    return int(cached.hits + cached.misses)


def register_store_metrics(registry: MetricsRegistry, stores: Any) -> None:
    """A task's stores (a TaskStores): the write-back cache's hits, misses, size and dirty
    entries (Samza's CachedStoreMetrics) and the changelog writes (LoggedStoreMetrics), read
    from the counters the stores keep."""
    for name, cached in sorted(stores.cached.items()):
        gauge = registry.computed_gauge
        gauge(CACHED_STORE_GROUP, f"{name}-gets", partial(_cache_gets, cached))
        gauge(CACHED_STORE_GROUP, f"{name}-cache-hits", partial(getattr, cached, "hits"))
        gauge(CACHED_STORE_GROUP, f"{name}-cache-misses", partial(getattr, cached, "misses"))
        gauge(CACHED_STORE_GROUP, f"{name}-cache-size", partial(len, cached))
        gauge(CACHED_STORE_GROUP, f"{name}-dirty-count", partial(getattr, cached, "dirty_count"))
        gauge(CACHED_STORE_GROUP, f"{name}-written", partial(getattr, cached, "written"))
    for name, logged in sorted(stores.logged.items()):
        registry.computed_gauge(LOGGED_STORE_GROUP, f"{name}-changelog-writes", partial(getattr, logged, "writes"))


def register_container_metrics(
    registry: MetricsRegistry,
    container: ContainerMetrics,
    tasks: list[TaskMetrics],
    consumers: Any,
    clock: Callable[[], float],
    restored: dict[str, int] | None = None,
) -> None:
    """Samza's SamzaContainerMetrics and SystemConsumersMetrics, in the container's registry;
    ``restored``: changelog messages applied per store at start-up."""
    restored = restored or {}
    group = CONTAINER_GROUP
    gauge = registry.computed_gauge

    def processed() -> int:
        return sum(t.envelopes_processed for t in tasks)

    gauge(group, "process-envelopes", processed)
    gauge(group, "process-null-envelopes", lambda: container.null_chooses)
    gauge(group, "window-calls", lambda: sum(t.window_count for t in tasks))
    gauge(group, "commit-calls", lambda: sum(t.commit_count for t in tasks))
    registry.computed_timer(group, "process-ns", lambda: (sum(t.process_s for t in tasks) * _NS, processed()))
    registry.computed_timer(
        group, "window-ns", lambda: (sum(t.window_s for t in tasks) * _NS, sum(t.window_count for t in tasks))
    )
    registry.computed_timer(
        group, "commit-ns", lambda: (sum(t.commit_s for t in tasks) * _NS, sum(t.commit_count for t in tasks))
    )
    registry.computed_timer(group, "block-ns", lambda: (consumers.block_s * _NS, consumers.blocks))
    gauge(group, "event-loop-utilization", _Utilization(consumers, clock))
    gauge(group, "container-startup-time", lambda: int(container.start_s * _NS))
    # not Samza's: how long the commit in progress has waited (0 between commits); it grows while
    # a system the commit writes to does not answer (a Kafka cluster without enough brokers)
    gauge(group, "commit-waiting-ms", lambda: int(container.commit_waiting_s(clock()) * 1000))
    gauge(group, "physical-memory-mb", _resident_mb)
    for store, count in sorted(restored.items()):  # changelog messages applied at start-up
        gauge(STORAGE_MANAGER_GROUP, f"{store}-restored-messages", partial(int, count))

    sc = SYSTEM_CONSUMERS_GROUP
    counts = _ConsumerCounts(consumers)
    registry.before_snapshot(counts.refresh)
    gauge(sc, "choose-null", lambda: container.null_chooses)
    gauge(sc, "choose-object", lambda: sum(counts.chosen.values()))
    gauge(sc, "unprocessed-messages", lambda: sum(counts.buffered.values()))
    for ssp in sorted(consumers.buffer_sizes()):
        gauge(
            sc,
            partition_metric(ssp.system, ssp.stream, ssp.partition, "messages-chosen"),
            partial(counts.chosen_of, ssp),
        )
        gauge(
            sc,
            partition_metric(ssp.system, ssp.stream, ssp.partition, "buffered-message-count"),
            partial(counts.buffered_of, ssp),
        )


class _ConsumerCounts:
    """SystemConsumers' per-partition counts, read once per snapshot for all its gauges."""

    def __init__(self, consumers: Any) -> None:
        self._consumers = consumers
        self.chosen: dict[SystemStreamPartition, int] = {}
        self.buffered: dict[SystemStreamPartition, int] = {}

    def refresh(self) -> None:
        self.chosen = self._consumers.chosen_counts()
        self.buffered = self._consumers.buffer_sizes()

    def chosen_of(self, ssp: SystemStreamPartition) -> int:
        return self.chosen[ssp]

    def buffered_of(self, ssp: SystemStreamPartition) -> int:
        return self.buffered[ssp]


class _Utilization:
    """Samza's event-loop-utilization: the share of wall time since the previous snapshot the
    run loop spent not waiting for messages (processing, windows, commits, choosing)."""

    def __init__(self, consumers: Any, clock: Callable[[], float]) -> None:
        self._consumers = consumers
        self._clock = clock
        self._since = clock()
        self._blocked = consumers.block_s
        self._value = 0.0

    def __call__(self) -> float:
        now, blocked = self._clock(), self._consumers.block_s
        elapsed = now - self._since
        if elapsed > 0:
            self._value = round(max(0.0, min(1.0, 1.0 - (blocked - self._blocked) / elapsed)), 4)
            self._since, self._blocked = now, blocked
        return self._value


def _resident_mb() -> float:
    """The process' resident memory now (Linux /proc), else its peak (getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        import resource

        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class ConsumerLag:
    """Per input partition, the high watermark (newest offset + 1, Kafka's meaning) and the
    messages behind it — counted from the last *processed* offset, so it is the job's lag, not
    the fetcher's — in the consumer metrics group of each system (Samza's
    ``<system>-<stream>-<partition>-messages-behind-high-watermark``). One batched metadata
    lookup per system per snapshot, through admins of its own (never the run loop's)."""

    def __init__(
        self,
        registry: MetricsRegistry,
        ssps: dict[SystemStreamPartition, dict[SystemStreamPartition, str]],
        new_admin: Callable[[str], Any],
        groups: Callable[[str], str],
        starting: dict[SystemStreamPartition, str] | None = None,
    ) -> None:
        #: ssp -> the last_processed dict of the task that owns it
        self._owners = ssps
        #: where the container started reading each partition (its checkpoint, a startpoint or
        #: the offset default): before a partition's first message it is what is behind
        self._starting = starting or {}
        self._new_admin = new_admin
        self._admins: dict[str, Any] = {}
        self._closed = False
        self.high_watermark: dict[SystemStreamPartition, int] = {}
        self.behind: dict[SystemStreamPartition, int] = {}
        for ssp in sorted(ssps):
            group = groups(ssp.system)
            registry.computed_gauge(
                group,
                partition_metric(ssp.system, ssp.stream, ssp.partition, "high-watermark"),
                partial(self.high_watermark.__getitem__, ssp),
            )
            registry.computed_gauge(
                group,
                partition_metric(ssp.system, ssp.stream, ssp.partition, "messages-behind-high-watermark"),
                partial(self.behind.__getitem__, ssp),
            )
        # the container's lag in one number per consumer group (not Samza's: a chart of a job's
        # lag should not have to match metric names per partition)
        by_group: dict[str, list[SystemStreamPartition]] = {}
        for ssp in ssps:
            by_group.setdefault(groups(ssp.system), []).append(ssp)
        for group, members in by_group.items():
            registry.computed_gauge(group, "messages-behind-high-watermark", partial(self._behind_of, members))
        registry.before_snapshot(self.refresh)

    def _behind_of(self, ssps: list[SystemStreamPartition]) -> int:
        return sum(self.behind[ssp] for ssp in ssps)

    def refresh(self) -> None:
        if self._closed:  # after shutdown the gauges keep their last values
            return
        by_system: dict[str, set[str]] = {}
        for ssp in self._owners:
            by_system.setdefault(ssp.system, set()).add(ssp.stream)
        for system, streams in by_system.items():
            admin = self._admins.get(system)
            if admin is None:
                admin = self._admins[system] = self._new_admin(system)
            metadata = admin.get_system_stream_metadata(sorted(streams))
            for ssp, last in self._owners.items():
                if ssp.system != system:
                    continue
                pm = metadata[ssp.stream].partitions.get(ssp.partition)
                if pm is None:
                    continue
                if not (pm.upcoming_offset.isdigit() and pm.oldest_offset.lstrip("-").isdigit()):
                    continue  # offsets that are not message counts (a files stream's <file>:<row>): no lag in messages
                high = int(pm.upcoming_offset)
                done = last.get(ssp)
                if done is not None and done.lstrip("-").isdigit():
                    next_offset = int(done) + 1
                else:
                    start = self._starting.get(ssp)
                    next_offset = (
                        int(start) if start is not None and start.lstrip("-").isdigit() else int(pm.oldest_offset)
                    )
                self.high_watermark[ssp] = high
                self.behind[ssp] = max(0, high - next_offset)

    def close(self) -> None:
        self._closed = True
        for admin in self._admins.values():
            stop_admin(admin)
        self._admins.clear()
