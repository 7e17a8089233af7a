"""CachedStore: Samza's write-back LRU cache in front of a store (logged or not).

Why: without it every ``put`` on a logged store costs a RocksDB write *and* one changelog
message (a producer ``send``, the most expensive per-message step on Kafka). With it, writes
land in the cache and are marked dirty; dirty entries go down to the store below — and so to
its changelog — only

* when the dirty set reaches ``stores.<store>.write.batch.size``,
* when a dirty entry is evicted (least recently used, the cache holds at most
  ``stores.<store>.object.cache.size`` entries),
* before ``range``/``all`` (so iteration sees every write), and always at ``flush()``, which
  the container calls at commit *before* flushing the producers and reading the changelog
  offsets for the checkpoint — so a checkpoint covers everything written before it.

So N writes of one key between two flushes produce one changelog message, not N.

Unlike Samza's object cache this one sits *below* the serdes and caches bytes: a value cannot
change in the cache when the caller mutates the object it put or got (Samza documents that
hazard), and a value that cannot be serialized still fails at the ``put`` that passed it.
A cached ``None`` is a known-absent key: a miss read from the store, or a delete (a dirty
tombstone, written down as a delete)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from samza_dagster.storage.errors import StoreSizeError

_MISSING = object()


class CachedStore:
    """Bytes → bytes, write-back LRU cache of at most ``cache_size`` entries over ``store``."""

    __slots__ = ("_store", "_cache", "_dirty", "cache_size", "batch_size", "hits", "misses", "written")

    def __init__(self, store, cache_size: int, batch_size: int) -> None:
        if cache_size < 1:
            raise StoreSizeError(f"cache size must be >= 1 entry, got {cache_size}")
        if not 1 <= batch_size <= cache_size:
            raise StoreSizeError(
                f"write batch size must be between 1 and the cache size {cache_size}, got {batch_size}"
            )
        self._store = store
        #: key → value (None: absent); order = recency, least recently used first
        self._cache: OrderedDict[bytes, bytes | None] = OrderedDict()
        #: keys whose cached value is not yet in the store below (a dict used as an ordered set)
        self._dirty: dict[bytes, None] = {}
        self.cache_size = cache_size
        self.batch_size = batch_size
        self.hits = 0
        self.misses = 0
        #: entries written down to the store below (each one changelog message if logged)
        self.written = 0

    @property
    def store(self):
        """The store below the cache."""
        return self._store

    @property
    def dirty_count(self) -> int:
        return len(self._dirty)

    def __len__(self) -> int:
        return len(self._cache)

    def get(self, key: bytes) -> bytes | None:
        cache = self._cache
        value = cache.get(key, _MISSING)
        if value is not _MISSING:
            cache.move_to_end(key)
            self.hits += 1
            return value  # type: ignore[return-value]
        self.misses += 1
        value = self._store.get(key)
        cache[key] = value
        if len(cache) > self.cache_size:
            self._evict()
        return value

    def put(self, key: bytes, value: bytes | None) -> None:
        """Cache ``value`` for ``key`` as dirty (None: a delete)."""
        cache = self._cache
        if key in cache:
            cache.move_to_end(key)
        cache[key] = value
        dirty = self._dirty
        dirty[key] = None
        if len(dirty) >= self.batch_size:
            self._write_dirty()
        if len(cache) > self.cache_size:
            self._evict()

    def delete(self, key: bytes) -> None:
        self.put(key, None)

    def range(self, from_key: bytes, to_key: bytes) -> Iterator[tuple[bytes, bytes]]:
        # the store below is complete once the dirty entries are down; clean cached entries
        # equal the store's, so its order and contents are the consistent view
        self._write_dirty()
        return self._store.range(from_key, to_key)

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        self._write_dirty()
        return self._store.all()

    def flush(self) -> None:
        """Write every dirty entry down (to the changelog too, if logged), then flush below."""
        self._write_dirty()
        self._store.flush()

    def close(self) -> None:
        """As Samza: dirty entries are written down first (a graceful stop keeps them; after a
        crash the changelog part is not covered by any checkpoint and is trimmed at restore)."""
        try:
            self._write_dirty()
        finally:
            self._cache.clear()
            self._store.close()

    # -- internals -----------------------------------------------------------------------------
    def _write_dirty(self) -> None:
        dirty = self._dirty
        if not dirty:
            return
        cache = self._cache
        store = self._store
        for key in dirty:
            value = cache[key]  # every dirty key is cached: eviction writes it down first
            if value is None:
                store.delete(key)
            else:
                store.put(key, value)
        self.written += len(dirty)
        dirty.clear()

    def _evict(self) -> None:
        cache = self._cache
        dirty = self._dirty
        while len(cache) > self.cache_size:
            key, value = cache.popitem(last=False)
            if key in dirty:
                del dirty[key]
                if value is None:
                    self._store.delete(key)
                else:
                    self._store.put(key, value)
                self.written += 1
