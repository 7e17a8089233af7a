"""Building a task's stores from ``stores.*`` config, validating their changelogs and
restoring them from the changelog before the task's first message.

State directory: ``job.logged.store.base.dir`` when set; else ``<log.path>-state`` beside the
default system's embedded log root when the default system is the log; else
``<tmp>/samza-dagster-state``. Under it: ``<job.name>-<job.id>/<store>/<task name>``.

Restore policy: a store *with* a changelog is wiped and rebuilt from its changelog partition
(oldest → the changelog offset in the task's checkpoint; see ``restore_stores``), so local files are a cache that may be deleted at
any time; a store without a changelog keeps its local files across restarts on the host.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.system_config import StorageConfig
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.model import StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.storage.cached import CachedStore
from samza_dagster.storage.kv import DEFAULT_BLOCK_CACHE_BYTES, BlockCache, InMemoryRawStore, RocksDBRawStore
from samza_dagster.storage.logged import LoggedStore
from samza_dagster.storage.serialized import SerializedKeyValueStore, refuse_pickled_state

DEFAULT_STORE_SERDE = "json"
#: ``stores.<store>.object.cache.size``: entries of the write-back cache of one store in one
#: task (0 disables the cache). Samza's default is 1000; see docs/decisions.md "## Stores".
DEFAULT_OBJECT_CACHE_SIZE = 10_000
#: ``stores.<store>.write.batch.size``: dirty entries that trigger a write-down (Samza: 500);
#: clamped to the cache size when only the cache size is configured.
DEFAULT_WRITE_BATCH_SIZE = 5_000

log = logging.getLogger(__name__)


class ChangelogPartitionMismatchError(ConfigError):
    """A store's changelog stream exists with a partition count other than the job needs."""


@dataclass(frozen=True)
class StoreSpec:
    name: str
    factory: str
    key_serde: str
    msg_serde: str
    changelog: SystemStream | None
    #: write-back cache entries per task (0: no cache) and the dirty count that writes down
    cache_size: int = DEFAULT_OBJECT_CACHE_SIZE
    batch_size: int = DEFAULT_WRITE_BATCH_SIZE
    #: the store's RocksDB block cache, shared by the TaskStores built from this spec — the
    #: container calls ``store_specs`` once, so one bounded cache per store per container
    block_cache: BlockCache = field(
        default_factory=lambda: BlockCache(DEFAULT_BLOCK_CACHE_BYTES), compare=False, repr=False
    )


def store_specs(config: Config, default_system: str) -> list[StoreSpec]:
    """One spec per configured store. Each call makes new block caches (see StoreSpec)."""
    storage = StorageConfig(config)
    specs = []
    for name in storage.store_names():
        changelog = storage.changelog(name, default_system)
        cache_sizes = _cache_sizes(config, name)
        if storage.side_inputs(name):
            if changelog is not None:
                key = f"stores.{name}.changelog"
                raise ConfigError(
                    f"config key {key!r}: store {name!r} has side inputs (stores.{name}.side.inputs), which are its "
                    "changelog already; remove one of the two", key=key,
                )
            # written by the side-inputs thread while the task reads: no write-back cache
            cache_sizes = {"cache_size": 0, "batch_size": DEFAULT_WRITE_BATCH_SIZE}
        specs.append(
            StoreSpec(
                name=name,
                factory=storage.factory(name),
                key_serde=storage.key_serde(name) or DEFAULT_STORE_SERDE,
                msg_serde=storage.msg_serde(name) or DEFAULT_STORE_SERDE,
                changelog=changelog,
                **cache_sizes,
                block_cache=BlockCache(storage.container_cache_size_bytes(name, DEFAULT_BLOCK_CACHE_BYTES)),
            )
        )
    return specs


def _cache_sizes(config: Config, store: str) -> dict[str, int]:
    """``stores.<store>.object.cache.size`` and ``stores.<store>.write.batch.size``, checked:
    the batch lives in the cache, so it cannot be larger (Samza's rule); an unset batch size
    larger than a configured cache size is lowered to it instead of failing."""
    cache_key = f"stores.{store}.object.cache.size"
    batch_key = f"stores.{store}.write.batch.size"
    cache = config.get_int(cache_key, DEFAULT_OBJECT_CACHE_SIZE)
    if cache is None or cache < 0:
        raise ConfigError(f"config key {cache_key!r}: expected a number of entries >= 0 (0 disables the cache), got {cache!r}", key=cache_key)
    explicit = config.get_int(batch_key)
    if explicit is not None and explicit < 1:
        raise ConfigError(f"config key {batch_key!r}: expected a number of entries >= 1, got {explicit!r}", key=batch_key)
    if explicit is not None and cache and explicit > cache:
        raise ConfigError(
            f"config key {batch_key!r}: the write batch ({explicit}) cannot be larger than the cache it lives in "
            f"({cache_key} = {cache})", key=batch_key,
        )
    batch = explicit if explicit is not None else min(DEFAULT_WRITE_BATCH_SIZE, cache) or DEFAULT_WRITE_BATCH_SIZE
    return {"cache_size": cache, "batch_size": batch}


def state_base_dir(config: Config, default_system: str) -> Path:
    explicit = config.get_str("job.logged.store.base.dir")
    if explicit:
        return Path(explicit)
    factory = config.get_str(f"systems.{default_system}.samza.factory") or "log"
    log_path = config.get_str(f"systems.{default_system}.log.path")
    if factory == "log" and log_path:
        p = Path(log_path)
        return p.parent / f"{p.name}-state"
    return Path(tempfile.gettempdir()) / "samza-dagster-state"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def prepare_changelogs(specs: list[StoreSpec], admins: dict, partition_count: int) -> None:
    """Create each changelog stream that does not exist with one partition per task
    (``partition_count`` = the JobModel's max changelog partition + 1) and fail clearly when
    an existing one has another count."""
    for spec in specs:
        if spec.changelog is None:
            continue
        admin = admins.get(spec.changelog.system)
        if admin is None:
            key = f"stores.{spec.name}.changelog"
            raise ConfigError(f"config key {key!r}: system {spec.changelog.system!r} is not configured", key=key)
        stream = spec.changelog.stream
        try:
            admin.create_stream(StreamSpec(stream, stream, spec.changelog.system, partition_count, {"cleanup.policy": "compact"}))
        except Exception:  # noqa: BLE001 - exists with another count: reported below with both counts
            pass
        metadata = admin.get_system_stream_metadata([stream])[stream]
        actual = metadata.partition_count
        if actual != partition_count:
            raise ChangelogPartitionMismatchError(
                f"store {spec.name!r}: changelog stream {spec.changelog.system}.{stream} has {actual} partitions, "
                f"but the job has {partition_count} tasks needing one changelog partition each "
                f"(stores.{spec.name}.changelog)",
                key=f"stores.{spec.name}.changelog",
            )


class TaskStores:
    """The stores of one task. ``stores`` maps name → the user-facing store; below it, per
    store: ``cached`` (the write-back cache, unless ``object.cache.size`` is 0) → ``logged``
    (when it has a changelog) → ``raw`` (RocksDB or in-memory). Restore and trim work on
    ``raw``/``logged`` before the task's first message, while the cache is still empty."""

    def __init__(
        self,
        task_name: str,
        changelog_partition: int,
        specs: list[StoreSpec],
        serdes: SerdeRegistry,
        base_dir: Path,
        producers: dict,
    ) -> None:
        self.task_name = task_name
        self.changelog_partition = changelog_partition
        self.specs = {s.name: s for s in specs}
        self.raw: dict[str, object] = {}
        self.stores: dict[str, SerializedKeyValueStore] = {}
        self.logged: dict[str, LoggedStore] = {}
        self.cached: dict[str, CachedStore] = {}
        #: the directory of each persistent store (side-input offsets are kept beside it)
        self.paths: dict[str, Path] = {}
        for spec in specs:
            if spec.factory == "rocksdb":
                path = self.paths[spec.name] = base_dir / _safe(spec.name) / _safe(task_name)
                if spec.changelog is not None and path.exists():
                    shutil.rmtree(path)  # rebuilt from the changelog below
                path.parent.mkdir(parents=True, exist_ok=True)
                raw = RocksDBRawStore(str(path), spec.block_cache)
            else:
                raw = InMemoryRawStore()
            self.raw[spec.name] = raw
            inner = raw
            if spec.changelog is not None:
                producer = producers.get(spec.changelog.system)
                if producer is None:
                    key = f"stores.{spec.name}.changelog"
                    raise ConfigError(f"config key {key!r}: system {spec.changelog.system!r} is not configured", key=key)
                inner = self.logged[spec.name] = LoggedStore(raw, producer, task_name, spec.changelog, changelog_partition)
            if spec.cache_size > 0:
                inner = self.cached[spec.name] = CachedStore(inner, spec.cache_size, spec.batch_size)
            self.stores[spec.name] = SerializedKeyValueStore(
                spec.name,
                inner,
                serdes.get(spec.key_serde, f"stores.{spec.name}.key.serde"),
                serdes.get(spec.msg_serde, f"stores.{spec.name}.msg.serde"),
            )

    def refuse_pickled_state(self) -> None:
        """After restore: a msgpack store must not hold an earlier version's pickles."""
        for name, spec in self.specs.items():
            refuse_pickled_state(name, self.raw[name], spec.key_serde, spec.msg_serde)

    def changelog_ssps(self) -> dict[str, SystemStreamPartition]:
        return {
            name: SystemStreamPartition(s.changelog.system, s.changelog.stream, self.changelog_partition)
            for name, s in self.specs.items()
            if s.changelog is not None
        }

    def flush(self) -> None:
        for store in self.stores.values():
            store.flush()

    def close(self) -> None:
        for store in self.stores.values():
            store.close()


#: what to do with one changelog partition at restore
_RESTORE_ALL = None  # restore everything (no checkpointed changelog offset to honour)


def _restore_limits(
    task_stores: list[TaskStores], checkpoints: dict | None
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
                        "changelog (state may include writes of uncommitted work)", ts.task_name, name, ssp,
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
    targets: dict[SystemStreamPartition, tuple[object, str, TaskStores]] = {}
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
        consumer = None
        for ssp in ssps:
            pm = metadata[ssp.stream].partitions.get(ssp.partition)
            if pm is None or pm.newest_offset is None:
                continue
            newest[ssp] = int(pm.newest_offset)
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
                    raise TimeoutError(f"restoring changelogs {sorted(map(str, remaining))} timed out")
                polled = consumer.poll(list(remaining), 0.1)
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
    trim: dict[SystemStreamPartition, set[bytes]], targets: dict[SystemStreamPartition, tuple[object, str, TaskStores]]
) -> None:
    """Write each key changed after the checkpoint back to its restored value (a tombstone if
    absent) through the store's LoggedStore path, then flush, before the task sees a message."""
    to_flush: dict[tuple[int, str], tuple[object, str]] = {}
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
        producer.flush(source)  # type: ignore[attr-defined]
