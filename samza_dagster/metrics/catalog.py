"""What each of the engine's metrics is — its kind, unit and meaning — for reporters that need
more than the snapshot's group → name → value (Prometheus: counters as ``_total``, base units,
HELP text, and the partition or store a name carries as labels).

Samza names per-partition metrics ``<system>-<stream>-<partition>-<what>`` and per-store ones
``<store>-<what>``; :func:`describe` takes those names apart. A metric of a group that is not
the engine's (a task's own, registered with ``new_counter``/``new_gauge``/``new_timer``) is
described from the kind its snapshot recorded (``MetricsSnapshot.types``), else as a gauge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from samza_dagster.metrics.groups import (
    CACHED_STORE_GROUP,
    CONTAINER_GROUP,
    LOGGED_STORE_GROUP,
    OPERATOR_GROUP,
    STORAGE_MANAGER_GROUP,
    SYSTEM_CONSUMERS_GROUP,
    TASK_GROUP,
)

#: the consumer-metrics groups end so (``KafkaSystemConsumerMetrics``, a plug-in's ``<factory>.SystemConsumerMetrics``)
_CONSUMER_GROUP_SUFFIX = "SystemConsumerMetrics"

COUNTER, GAUGE, TIMER = "counter", "gauge", "timer"
_NS = 1e-9
_MIB = float(2**20)
_INVALID = re.compile(r"[^a-zA-Z0-9_:]")


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """One metric as a reporter shows it: ``family`` (snake case, before any unit or
    ``_total``), ``kind``, ``help``, the base ``unit`` it is shown in and the ``scale`` from the
    Samza value to it, and ``labels`` taken from the Samza name (system, stream, partition;
    store; operator)."""

    family: str
    kind: str
    help: str
    unit: str = ""
    scale: float = 1.0
    labels: dict[str, str] = field(default_factory=dict)


def _info(family: str, kind: str, help_text: str, unit: str = "", scale: float = 1.0) -> MetricInfo:
    return MetricInfo(family, kind, help_text, unit, scale)


_TIMER_HELP = "mean time {} since the previous snapshot"

#: metrics named the same in every engine group they appear in
_NAMED: dict[str, MetricInfo] = {
    "process-envelopes": _info("process_envelopes", COUNTER, "envelopes processed by the container's tasks"),
    "process-null-envelopes": _info("process_null_envelopes", COUNTER, "run-loop turns that found no envelope"),
    "process-calls": _info("process_calls", COUNTER, "envelopes the task processed, control messages included"),
    "messages-actually-processed": _info(
        "messages_actually_processed",
        COUNTER,
        "envelopes that reached the task's code (control messages and skipped bad messages left out)",
    ),
    "process-batch-calls": _info("process_batch_calls", COUNTER, "process_batch() calls (batch tasks)"),
    "window-calls": _info("window_calls", COUNTER, "window() calls"),
    "commit-calls": _info("commit_calls", COUNTER, "commits"),
    "control-messages": _info("control_messages", COUNTER, "end-of-stream and watermark messages processed"),
    "deserialization-errors-dropped": _info(
        "deserialization_errors_dropped", COUNTER, "messages that did not deserialize, skipped"
    ),
    "deserialization-errors-dead-lettered": _info(
        "deserialization_errors_dead_lettered",
        COUNTER,
        "messages that did not deserialize, sent to the dead-letter stream",
    ),
    "end-of-stream-partitions": _info("end_of_stream_partitions", GAUGE, "input partitions at end-of-stream"),
    "process-ns": _info("process", TIMER, _TIMER_HELP.format("to process one envelope"), "seconds", _NS),
    "window-ns": _info("window", TIMER, _TIMER_HELP.format("per window() call"), "seconds", _NS),
    "commit-ns": _info("commit", TIMER, _TIMER_HELP.format("per commit"), "seconds", _NS),
    "block-ns": _info(
        "block", TIMER, _TIMER_HELP.format("the run loop waited for a message, per wait"), "seconds", _NS
    ),
    "event-loop-utilization": _info(
        "event_loop_utilization",
        GAUGE,
        "share of the wall time since the previous snapshot the run loop did not wait for messages (0-1)",
        "ratio",
    ),
    "container-startup-time": _info(
        "container_startup", GAUGE, "time from the container's start to its run loop (restore included)", "seconds", _NS
    ),
    "physical-memory-mb": _info("physical_memory", GAUGE, "the container process' resident memory", "bytes", _MIB),
    "choose-object": _info("choose_object", COUNTER, "envelopes SystemConsumers handed to the run loop"),
    "choose-null": _info("choose_null", COUNTER, "chooses that found no envelope"),
    "unprocessed-messages": _info("unprocessed_messages", GAUGE, "envelopes buffered in SystemConsumers"),
    "messages-behind-high-watermark": _info(
        "container_messages_behind_high_watermark",
        GAUGE,
        "messages behind the high watermark over all of the container's partitions of the system (the job's lag)",
    ),
}

#: ``<system>-<stream>-<partition>-<suffix>``, longest suffix first
_PER_PARTITION: list[tuple[str, MetricInfo]] = sorted(
    {
        "messages-behind-high-watermark": _info(
            "messages_behind_high_watermark",
            GAUGE,
            "messages of the partition not yet processed (its high watermark minus the next offset to process)",
        ),
        "high-watermark": _info("high_watermark", GAUGE, "the partition's upcoming offset"),
        "messages-chosen": _info("messages_chosen", COUNTER, "envelopes of the partition handed to the run loop"),
        "buffered-message-count": _info("buffered_messages", GAUGE, "envelopes of the partition buffered"),
        "messages-processed": _info("messages_processed", COUNTER, "envelopes of the partition the task processed"),
        "offset": _info("offset", GAUGE, "the last offset of the partition the task processed"),
    }.items(),
    key=lambda item: -len(item[0]),
)

#: ``<store>-<suffix>``, longest suffix first
_PER_STORE: list[tuple[str, MetricInfo]] = sorted(
    {
        "gets": _info("store_gets", COUNTER, "lookups in the store's write-back cache"),
        "cache-hits": _info("store_cache_hits", COUNTER, "lookups the write-back cache answered"),
        "cache-misses": _info("store_cache_misses", COUNTER, "lookups the write-back cache passed to the store"),
        "cache-size": _info("store_cache_entries", GAUGE, "entries held in the write-back cache"),
        "dirty-count": _info("store_dirty_entries", GAUGE, "cache entries not yet written to the store"),
        "written": _info("store_written", COUNTER, "cache entries written to the store"),
        "changelog-writes": _info("store_changelog_writes", COUNTER, "messages written to the store's changelog"),
        "restored-messages": _info(
            "store_restored_messages", GAUGE, "changelog messages applied to the store when the container started"
        ),
    }.items(),
    key=lambda item: -len(item[0]),
)

_STORE_GROUPS = frozenset({CACHED_STORE_GROUP, LOGGED_STORE_GROUP, STORAGE_MANAGER_GROUP})
_NAMED_GROUPS = frozenset({CONTAINER_GROUP, TASK_GROUP, SYSTEM_CONSUMERS_GROUP})


def is_engine_group(group: str) -> bool:
    return (
        group in _NAMED_GROUPS
        or group in _STORE_GROUPS
        or group == OPERATOR_GROUP
        or group.endswith(_CONSUMER_GROUP_SUFFIX)
    )


def snake(name: str) -> str:
    """A metric name with every character Prometheus does not allow as ``_``."""
    return _INVALID.sub("_", name)


def describe(group: str, name: str, kind: str | None = None, systems: Iterable[str] = ()) -> MetricInfo:
    """The metric ``name`` of ``group``. ``kind``: what the snapshot recorded for it (a task's
    own metric); ``systems``: the job's system names, to split ``<system>-<stream>`` where
    either holds a ``-`` (without them, the system is taken to end at the first ``-``)."""
    if is_engine_group(group):
        known = _engine(group, name, systems)
        if known is not None:
            return known
    return _own(group, name, kind)


def _engine(group: str, name: str, systems: Iterable[str]) -> MetricInfo | None:
    if group == OPERATOR_GROUP:
        counter, dot, operator = name.partition(".")
        if dot:
            return MetricInfo(
                f"operator_{snake(counter)}",
                COUNTER,
                f"the operator's {counter} counter",
                labels={"operator": operator},
            )
        return _info(snake(counter), COUNTER, f"the operator runtime's {counter} counter, all operators of the task")
    if group in _STORE_GROUPS:
        for suffix, info in _PER_STORE:
            if name.endswith("-" + suffix) and len(name) > len(suffix) + 1:
                return _with_labels(info, {"store": name[: -len(suffix) - 1]})
        return None
    for suffix, info in _PER_PARTITION:
        if name.endswith("-" + suffix):
            where = _partition_labels(name[: -len(suffix) - 1], systems)
            if where is not None:
                return _with_labels(info, where)
    return _NAMED.get(name)


def _partition_labels(prefix: str, systems: Iterable[str]) -> dict[str, str] | None:
    """``<system>-<stream>-<partition>`` as labels; None when it is not one."""
    rest, dash, partition = prefix.rpartition("-")
    if not dash or not partition.isdigit():
        return None
    for system in sorted(systems, key=len, reverse=True):
        if rest.startswith(system + "-") and len(rest) > len(system) + 1:
            return {"system": system, "stream": rest[len(system) + 1 :], "partition": partition}
    system, dash, stream = rest.partition("-")
    if not dash or not system or not stream:
        return None
    return {"system": system, "stream": stream, "partition": partition}


def _with_labels(info: MetricInfo, labels: dict[str, str]) -> MetricInfo:
    return MetricInfo(info.family, info.kind, info.help, info.unit, info.scale, labels)


def _own(group: str, name: str, kind: str | None) -> MetricInfo:
    """A metric the engine does not know: a task's own, by the kind its snapshot recorded."""
    family = snake(name)
    if kind == TIMER:
        family = family[:-3] if family.endswith("_ns") else family
        return _info(
            family, TIMER, f"timer {name} of group {group}: mean time since the previous snapshot", "seconds", _NS
        )
    if kind == COUNTER:
        return _info(family[:-6] if family.endswith("_total") else family, COUNTER, f"counter {name} of group {group}")
    return _info(family, GAUGE, f"gauge {name} of group {group}")
