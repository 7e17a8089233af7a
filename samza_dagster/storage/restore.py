"""Restoring stores from their changelogs before the task's first message, to exactly the offset
the task's checkpoint recorded, and trimming what uncommitted work wrote after it."""

from __future__ import annotations

import logging
import time

from samza_dagster.errors import ReadTimeoutError
from samza_dagster.model import SystemStreamPartition
from samza_dagster.storage.kv import RawStore
from samza_dagster.storage.task_stores import TaskStores
from samza_dagster.system.positions import position_reached
from samza_dagster.system.protocols import SystemProducer

log = logging.getLogger(__name__)


_RESTORE_ALL = None  # restore everything (no checkpointed changelog offset to honour)


def _restore_limits(task_stores: list[TaskStores], checkpoints: dict | None) -> dict[SystemStreamPartition, int | None]:
    """Per changelog SSP, the newest changelog offset to apply (entries after it are
    discarded and trimmed), or None to apply everything (see ``restore_stores``)."""
    limits: dict[SystemStreamPartition, int | None] = {}
    for ts in task_stores:
        cp = None if checkpoints is None else checkpoints.get(ts.task_name)
        for name, ssp in ts.changelog_ssps().items():
            if checkpoints is None:
                limits[ssp] = _RESTORE_ALL
            elif cp is None:
                limits[ssp] = -1  # the task never committed: its state is empty
            else:
                entry = cp.changelog_offsets.get(name)
                if entry is None or entry[0] != ssp:
                    log.warning(
                        "task %s: checkpoint has no changelog offset for store %r on %s; restoring the whole "
                        "changelog (state may include writes of uncommitted work)",
                        ts.task_name,
                        name,
                        ssp,
                    )
                    limits[ssp] = _RESTORE_ALL
                else:
                    limits[ssp] = -1 if entry[1] is None else int(entry[1])
    return limits


def restore_stores(
    task_stores: list[TaskStores], admins: dict, consumer_for_system, checkpoints: dict | None = None
) -> dict[str, int]:
    """Rebuild each store from its changelog partition. Returns the number of changelog
    messages applied per store name.

    Transactional state (Samza 1.5+): with ``checkpoints`` (task name → the task's last
    Checkpoint, as read at start-up) a store is restored to exactly the changelog offset its
    task's checkpoint recorded — the state that matches the input offsets the task resumes
    from. Changelog entries after that offset were written by work that was never committed
    (a crash between flush and checkpoint, or after it): they are not applied, and every key
    they touched is *trimmed* — its restored value (or a tombstone) is written to the
    changelog again and flushed — so a later restore up to a newer checkpoint cannot pick the
    stale writes up. A task without any checkpoint restores to empty (it reprocesses from its
    default offsets; everything in the changelog is uncommitted). A checkpoint that lacks an
    offset for a store (a store added later) restores the whole changelog, with a warning.
    ``checkpoints=None`` restores everything up to the newest offset (the non-transactional
    policy, for callers without checkpoints)."""
    targets: dict[SystemStreamPartition, tuple[RawStore, str, TaskStores]] = {}
    for ts in task_stores:
        for name, ssp in ts.changelog_ssps().items():
            targets[ssp] = (ts.raw[name], name, ts)
    if not targets:
        return {}
    limits = _restore_limits(task_stores, checkpoints)
    by_system: dict[str, list[SystemStreamPartition]] = {}
    for ssp in targets:
        by_system.setdefault(ssp.system, []).append(ssp)
    restored: dict[str, int] = {}
    trim: dict[SystemStreamPartition, set[bytes]] = {}
    for system, ssps in by_system.items():
        admin = admins[system]
        streams = sorted({s.stream for s in ssps})
        metadata = admin.get_system_stream_metadata(streams)
        newest: dict[SystemStreamPartition, int] = {}
        upcoming: dict[SystemStreamPartition, int] = {}
        consumer = None
        for ssp in ssps:
            pm = metadata[ssp.stream].partitions.get(ssp.partition)
            if pm is None or pm.newest_offset is None:
                continue
            newest[ssp] = int(pm.newest_offset)
            upcoming[ssp] = int(pm.upcoming_offset)
            if consumer is None:
                consumer = consumer_for_system(system)
            consumer.register(ssp, pm.oldest_offset)
        if consumer is None:
            continue
        consumer.start()
        try:
            remaining = set(newest)
            deadline = time.monotonic() + 600
            while remaining:
                if time.monotonic() > deadline:
                    raise ReadTimeoutError(f"restoring changelogs {sorted(map(str, remaining))} timed out")
                polled = consumer.poll(list(remaining), 0.1)
                for ssp in [s for s in remaining if not polled.get(s)]:
                    # the newest offset may hold no message: an exactly-once job's commit marker (Kafka)
                    if position_reached(consumer, ssp, upcoming[ssp]):
                        remaining.discard(ssp)
                for ssp, envelopes in polled.items():
                    if ssp not in remaining:
                        continue
                    raw, name, _ = targets[ssp]
                    last = newest[ssp]
                    limit = limits.get(ssp)
                    count = 0
                    for env in envelopes:
                        if env.is_end_of_stream:
                            remaining.discard(ssp)
                            break
                        offset = int(env.offset)
                        if offset > last:
                            remaining.discard(ssp)
                            break
                        if limit is not None and offset > limit:
                            trim.setdefault(ssp, set()).add(env.key)
                        else:
                            if env.message is None:
                                raw.delete(env.key)
                            else:
                                raw.put(env.key, env.message)
                            count += 1
                        if offset >= last:
                            remaining.discard(ssp)
                            break
                    restored[name] = restored.get(name, 0) + count
        finally:
            consumer.stop()
    if trim:
        _trim_changelogs(trim, targets)
    return restored


def _trim_changelogs(
    trim: dict[SystemStreamPartition, set[bytes]],
    targets: dict[SystemStreamPartition, tuple[RawStore, str, TaskStores]],
) -> None:
    """Write each key changed after the checkpoint back to its restored value (a tombstone if
    absent) through the store's LoggedStore path, then flush, before the task sees a message."""
    to_flush: dict[tuple[int, str], tuple[SystemProducer, str]] = {}
    for ssp, keys in trim.items():
        raw, name, ts = targets[ssp]
        logged = ts.logged[name]
        for key in sorted(k for k in keys if k is not None):
            value = raw.get(key)
            if value is None:
                logged.delete(key)
            else:
                logged.put(key, value)
        log.info("task %s: store %r: trimmed %d key(s) written after the checkpoint", ts.task_name, name, len(keys))
        to_flush[(id(logged.producer), ts.task_name)] = (logged.producer, ts.task_name)
    for producer, source in to_flush.values():
        producer.flush(source)
