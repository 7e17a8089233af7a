"""Key-value state: RocksDB (rocksdict) and in-memory stores, changelogs and restore."""

from samza_dagster.storage.cached import CachedStore
from samza_dagster.storage.changelog import ChangelogPartitionMismatchError, prepare_changelogs
from samza_dagster.storage.kv import BlockCache, InMemoryRawStore, KeyValueStore, RocksDBRawStore
from samza_dagster.storage.logged import LoggedStore
from samza_dagster.storage.restore import restore_stores
from samza_dagster.storage.serialized import SerializedKeyValueStore
from samza_dagster.storage.specs import StoreSpec, state_base_dir, store_specs
from samza_dagster.storage.task_stores import TaskStores

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
