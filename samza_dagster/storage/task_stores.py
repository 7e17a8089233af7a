"""TaskStores: one task's stores, each built as layers over a raw store (RocksDB or in-memory).

Restore policy: a store *with* a changelog is wiped and rebuilt from its changelog partition
(restore.py), so local files are a cache that may be deleted at any time; a store without a
changelog keeps its local files across restarts on the host (side-input stores resume after the
offsets kept beside them).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from samza_dagster.config import keys
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import SystemStreamPartition
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.storage.cached import CachedStore
from samza_dagster.storage.kv import InMemoryRawStore, RawStore, RocksDBRawStore
from samza_dagster.storage.logged import LoggedStore
from samza_dagster.storage.serialized import SerializedKeyValueStore, refuse_pickled_state
from samza_dagster.storage.specs import StoreSpec, safe_name


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
        self.raw: dict[str, RawStore] = {}
        self.stores: dict[str, SerializedKeyValueStore] = {}
        self.logged: dict[str, LoggedStore] = {}
        self.cached: dict[str, CachedStore] = {}
        #: the directory of each persistent store (side-input offsets are kept beside it)
        self.paths: dict[str, Path] = {}
        for spec in specs:
            if spec.factory == "rocksdb":
                path = self.paths[spec.name] = base_dir / safe_name(spec.name) / safe_name(task_name)
                if spec.changelog is not None and path.exists():
                    shutil.rmtree(path)  # rebuilt from the changelog below
                path.parent.mkdir(parents=True, exist_ok=True)
                raw: RawStore = RocksDBRawStore(str(path), spec.block_cache)
            else:
                raw = InMemoryRawStore()
            self.raw[spec.name] = raw
            inner = raw
            if spec.changelog is not None:
                producer = producers.get(spec.changelog.system)
                if producer is None:
                    key = keys.STORE_CHANGELOG.key(store=spec.name)
                    raise ConfigError(
                        f"config key {key!r}: system {spec.changelog.system!r} is not configured", key=key
                    )
                inner = self.logged[spec.name] = LoggedStore(
                    raw, producer, task_name, spec.changelog, changelog_partition
                )
            if spec.cache_size > 0:
                inner = self.cached[spec.name] = CachedStore(inner, spec.cache_size, spec.batch_size)
            self.stores[spec.name] = SerializedKeyValueStore(
                spec.name,
                inner,
                serdes.get(spec.key_serde, keys.STORE_KEY_SERDE.key(store=spec.name)),
                serdes.get(spec.msg_serde, keys.STORE_MSG_SERDE.key(store=spec.name)),
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
