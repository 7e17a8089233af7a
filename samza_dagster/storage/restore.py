"""Restoring stores from their changelogs before the task's first message, to exactly the offset
the task's checkpoint recorded, and trimming what uncommitted work wrote after it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from samza_dagster.checkpoint.checkpoint import Checkpoint
from samza_dagster.errors import ReadTimeoutError
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.storage.kv import RawStore
from samza_dagster.storage.task_stores import TaskStores
from samza_dagster.system.positions import position_reached
from samza_dagster.system.protocols import SystemAdmin, SystemConsumer, SystemProducer

log = logging.getLogger(__name__)


_RESTORE_ALL = None  # restore everything (no checkpointed changelog offset to honour)
#: the longest reading one system's changelogs to their newest offsets may take at a container's
#: start before it fails naming them (ReadTimeoutError): far beyond any healthy restore (a
#: changelog is compacted, so it holds about one message per key), short enough that a
#: changelog that stopped growing short of its metadata's newest offset (a lost partition, a
#: broker that went away) fails the container instead of hanging it
RESTORE_TIMEOUT_S = 600.0


def _restore_limits(
    task_stores: list[TaskStores], checkpoints: Mapping[str, Checkpoint] | None
) -> dict[SystemStreamPartition, int | None]:
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
    task_stores: list[TaskStores],
    admins: Mapping[str, SystemAdmin],
    consumer_for_system: Callable[[str], SystemConsumer],
    checkpoints: Mapping[str, Checkpoint] | None = None,
    *,
    timeout_s: float = RESTORE_TIMEOUT_S,
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
    policy, for callers without checkpoints).

    The changelogs of one system are read by one consumer, which must reach their newest
    offsets within ``timeout_s`` (:data:`RESTORE_TIMEOUT_S`), else ReadTimeoutError names them."""
    targets = {ssp: _Target(ts.raw[name], name, ts) for ts in task_stores for name, ssp in ts.changelog_ssps().items()}
    if not targets:
        return {}
    restore = _Restore(targets, _restore_limits(task_stores, checkpoints))
    by_system: dict[str, list[SystemStreamPartition]] = {}
    for ssp in targets:
        by_system.setdefault(ssp.system, []).append(ssp)
    for system, ssps in by_system.items():
        ends = _changelog_ends(admins[system], ssps)
        if ends:  # an empty changelog has nothing to restore: no consumer is started for it
            restore.read_system(consumer_for_system(system), ends, timeout_s)
    if restore.trim:
        _trim_changelogs(restore.trim, targets)
    return restore.restored


@dataclass(frozen=True, slots=True)
class _Target:
    """The store a changelog partition restores: its raw store, name and task's stores."""

    raw: RawStore
    name: str
    task_stores: TaskStores


@dataclass(frozen=True, slots=True)
class _End:
    """Where a changelog partition's restore starts (``oldest``) and ends: its ``newest``
    message, and the ``upcoming`` offset a consumer is at once past it."""

    oldest: str
    newest: int
    upcoming: int


def _changelog_ends(admin: SystemAdmin, ssps: list[SystemStreamPartition]) -> dict[SystemStreamPartition, _End]:
    """The ends of each changelog partition of one system that holds anything (an empty one,
    or one the admin does not know, is skipped), in one metadata lookup."""
    metadata = admin.get_system_stream_metadata(sorted({s.stream for s in ssps}))
    ends: dict[SystemStreamPartition, _End] = {}
    for ssp in ssps:
        pm = metadata[ssp.stream].partitions.get(ssp.partition)
        if pm is not None and pm.newest_offset is not None:
            ends[ssp] = _End(pm.oldest_offset, int(pm.newest_offset), int(pm.upcoming_offset))
    return ends


@dataclass
class _Restore:
    """One restore's progress over every system: messages applied per store, and the keys
    each changelog partition holds past its checkpointed offset (to be trimmed)."""

    targets: dict[SystemStreamPartition, _Target]
    limits: dict[SystemStreamPartition, int | None]
    restored: dict[str, int] = field(default_factory=dict)
    trim: dict[SystemStreamPartition, set[bytes]] = field(default_factory=dict)

    def read_system(self, consumer: SystemConsumer, ends: dict[SystemStreamPartition, _End], timeout_s: float) -> None:
        """Read one system's changelog partitions, each from its oldest offset to its newest,
        applying what the checkpoint covers."""
        for ssp, end in ends.items():
            consumer.register(ssp, end.oldest)
        consumer.start()
        try:
            remaining = set(ends)
            deadline = time.monotonic() + timeout_s
            while remaining:
                if time.monotonic() > deadline:
                    raise ReadTimeoutError(f"restoring changelogs {sorted(map(str, remaining))} timed out")
                polled = consumer.poll(list(remaining), 0.1)
                for ssp in [s for s in remaining if not polled.get(s)]:
                    # the newest offset may hold no message: an exactly-once job's commit marker (Kafka)
                    if position_reached(consumer, ssp, ends[ssp].upcoming):
                        remaining.discard(ssp)
                for ssp, envelopes in polled.items():
                    if ssp in remaining and self._apply(ssp, envelopes, ends[ssp].newest):
                        remaining.discard(ssp)
        finally:
            consumer.stop()

    def _apply(self, ssp: SystemStreamPartition, envelopes: list[IncomingMessageEnvelope], newest: int) -> bool:
        """Apply a polled run of one changelog partition's envelopes up to its checkpointed
        offset, noting the keys of those after it for trimming. True once the partition's
        newest offset (or its end of stream) is reached: nothing after it is part of this restore."""
        target, limit = self.targets[ssp], self.limits.get(ssp)
        count = 0
        done = False
        for env in envelopes:
            if env.is_end_of_stream:
                done = True
                break
            offset = int(env.offset)
            if offset > newest:
                done = True
                break
            if limit is not None and offset > limit:
                self.trim.setdefault(ssp, set()).add(env.key)
            else:
                if env.message is None:
                    target.raw.delete(env.key)
                else:
                    target.raw.put(env.key, env.message)
                count += 1
            if offset >= newest:
                done = True
                break
        self.restored[target.name] = self.restored.get(target.name, 0) + count
        return done


def _trim_changelogs(
    trim: dict[SystemStreamPartition, set[bytes]], targets: dict[SystemStreamPartition, _Target]
) -> None:
    """Write each key changed after the checkpoint back to its restored value (a tombstone if
    absent) through the store's LoggedStore path, then flush, before the task sees a message."""
    to_flush: dict[tuple[int, str], tuple[SystemProducer, str]] = {}
    for ssp, keys in trim.items():
        raw, name, ts = targets[ssp].raw, targets[ssp].name, targets[ssp].task_stores
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
