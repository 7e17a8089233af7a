"""The KeyValueStore API (as Samza's) and the byte-level stores under it.

Layering, as in Samza: SerializedKeyValueStore (objects <-> bytes with the store's serdes)
→ CachedStore (write-back LRU cache, storage/cached.py) → LoggedStore (every write also goes to the changelog) → a raw byte store (RocksDB or
in-memory). Restore writes straight into the raw store, never back to the changelog."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from samza_dagster.config.keys import STORE_CONTAINER_CACHE_SIZE_BYTES
from samza_dagster.storage.errors import StoreSizeError

if TYPE_CHECKING:  # rocksdict is imported where a RocksDB store opens
    from rocksdict import Cache


class KeyValueStore(Protocol):
    def get(self, key: Any) -> Any: ...
    def put(self, key: Any, value: Any) -> None: ...
    def delete(self, key: Any) -> None: ...
    def get_all(self, keys: Iterable[Any]) -> dict[Any, Any]: ...
    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None: ...
    def range(self, from_key: Any, to_key: Any) -> Iterator[tuple[Any, Any]]: ...
    def all(self) -> Iterator[tuple[Any, Any]]: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class RawStore(Protocol):
    """A byte-level store (the layers under SerializedKeyValueStore: cached, logged, raw)."""

    def get(self, key: bytes) -> bytes | None: ...
    def put(self, key: bytes, value: bytes) -> None: ...
    def delete(self, key: bytes) -> None: ...
    def range(self, from_key: bytes, to_key: bytes) -> Iterator[tuple[bytes, bytes]]: ...
    def all(self) -> Iterator[tuple[bytes, bytes]]: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class InMemoryRawStore:
    """Bytes → bytes in a dict; ``range``/``all`` sort the keys (byte order, as RocksDB)."""

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._data[key] = value

    def delete(self, key: bytes) -> None:
        self._data.pop(key, None)

    def range(self, from_key: bytes, to_key: bytes) -> Iterator[tuple[bytes, bytes]]:
        keys = sorted(self._data)
        lo = bisect.bisect_left(keys, from_key)
        hi = bisect.bisect_left(keys, to_key)
        data = self._data
        return iter([(k, data[k]) for k in keys[lo:hi]])

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        data = self._data
        return iter([(k, data[k]) for k in sorted(data)])

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def clear(self) -> None:
        self._data.clear()


#: Default capacity of a store's RocksDB block cache in one container (all its tasks), bytes:
#: ``stores.<store>.container.cache.size.bytes``. Samza's default is 100 MB; ours is small
#: because the SST files are in the OS page cache anyway (a miss costs a checksum and a
#: decompression, not a disk read: no throughput difference measured on the word count) and
#: because the cache fills with blocks of obsolete files — see ``BlockCache``.
DEFAULT_BLOCK_CACHE_BYTES: int = STORE_CONTAINER_CACHE_SIZE_BYTES.default


class BlockCache:
    """One RocksDB LRU block cache of ``capacity`` bytes, created on first use and shared by
    every ``RocksDBRawStore`` given it (a store's instances in all tasks of a container).

    Why it must be bounded explicitly: without one, each RocksDB database gets its own 32 MiB
    default cache, and a store flushed at every commit writes a new SST file each time whose
    blocks are read into the cache; the blocks of files removed by compaction are never
    evicted early, only by LRU. So the process's memory grew with the number of commits (with
    the number of messages, in a steady stream) until 32 MiB *per task per store* (the soak
    benchmark's growth: docs/benchmarks.md, "soak")."""

    __slots__ = ("capacity", "_cache")

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise StoreSizeError(f"RocksDB block cache capacity must be >= 0 bytes, got {capacity}")
        self.capacity = capacity
        self._cache: Cache | None = None

    def table_options(self):
        """rocksdict BlockBasedOptions using this cache (capacity 0: no block cache at all)."""
        # RocksDB loads only when a job has a RocksDB store
        from rocksdict import BlockBasedOptions, Cache

        table = BlockBasedOptions()
        if self.capacity == 0:
            table.disable_cache()
            return table
        if self._cache is None:  # lazily: stores of one container open on one thread
            self._cache = Cache(self.capacity)
        table.set_block_cache(self._cache)
        return table

    def usage(self) -> int:
        """Bytes held in the cache now (0 before any store used it)."""
        return 0 if self._cache is None else self._cache.get_usage()


class RocksDBRawStore:
    """Bytes → bytes in a RocksDB database (rocksdict, raw mode) at ``path``. Its block cache
    is ``block_cache`` (shared with other stores) or a private one of the default capacity —
    never RocksDB's own per-database default (see ``BlockCache``)."""

    def __init__(self, path: str, block_cache: BlockCache | None = None) -> None:
        from rocksdict import Options, Rdict

        self.path = path
        self.block_cache = block_cache or BlockCache(DEFAULT_BLOCK_CACHE_BYTES)
        options = Options(raw_mode=True)
        options.set_block_based_table_factory(self.block_cache.table_options())
        self._db = Rdict(path, options)

    def get(self, key: bytes) -> bytes | None:
        return self._db.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._db[key] = value

    def delete(self, key: bytes) -> None:
        self._db.delete(key)

    def range(self, from_key: bytes, to_key: bytes) -> Iterator[tuple[bytes, bytes]]:
        it = self._db.iter()
        it.seek(from_key)
        while it.valid():
            key = it.key()
            if key >= to_key:
                return
            yield key, it.value()
            it.next()

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        it = self._db.iter()
        it.seek_to_first()
        while it.valid():
            yield it.key(), it.value()
            it.next()

    def flush(self) -> None:
        self._db.flush()

    def property_int(self, name: str) -> int | None:
        """A RocksDB integer property of the database, e.g. ``rocksdb.block-cache-usage``
        (diagnostics and tests); None when RocksDB does not report it."""
        return self._db.property_int_value(name)

    def close(self) -> None:
        self._db.close()
