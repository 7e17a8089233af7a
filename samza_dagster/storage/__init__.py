"""Key-value state: RocksDB (rocksdict) and in-memory stores, changelogs and restore."""

from samza_dagster.storage.cached import CachedStore
from samza_dagster.storage.kv import BlockCache, InMemoryRawStore, KeyValueStore, RocksDBRawStore
from samza_dagster.storage.logged import LoggedStore
from samza_dagster.storage.manager import (
    ChangelogPartitionMismatchError,
    StoreSpec,
    TaskStores,
    prepare_changelogs,
    restore_stores,
    state_base_dir,
    store_specs,
)
from samza_dagster.storage.serialized import SerializedKeyValueStore

__all__ = [
    "BlockCache",
    "CachedStore",
    "ChangelogPartitionMismatchError",
    "InMemoryRawStore",
    "KeyValueStore",
    "LoggedStore",
    "RocksDBRawStore",
    "SerializedKeyValueStore",
    "StoreSpec",
    "TaskStores",
    "prepare_changelogs",
    "restore_stores",
    "state_base_dir",
    "store_specs",
]
