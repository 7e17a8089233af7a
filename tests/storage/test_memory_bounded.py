"""Memory does not grow with the number of messages: the RocksDB block cache is bounded.

The soak benchmark's growth (~20 MB per million messages) was native, not Python heap: every
commit flushes the store's memtable into a new SST file, the next reads pull that file's
blocks into the block cache, and blocks of files compacted away leave it only by LRU. With
RocksDB's default — a private 32 MiB cache per database, i.e. per task per store — memory
grew with every commit up to 32 MiB × tasks × stores. These tests measure with RocksDB's own
counters (``rocksdb.block-cache-usage`` / ``-capacity``), which ``tracemalloc`` cannot see.
"""

from __future__ import annotations

import random
import threading

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container import SamzaContainer
from samza_dagster.storage import BlockCache, RocksDBRawStore, store_specs
from samza_dagster.storage.kv import DEFAULT_BLOCK_CACHE_BYTES
from support.waiting import wait_until
from tests.apps.harness import create_stream, job_model, produce

KEYS = [f"word{i:04d}".encode() for i in range(1000)]
SMALL_CACHE = 256 * 1024


def _commits(store: RocksDBRawStore, rounds: int, rnd: random.Random) -> None:
    """The word count's pattern: read-modify-write 100 words, then flush (as at a commit)."""
    for _ in range(rounds):
        for _ in range(100):
            key = rnd.choice(KEYS)
            old = store.get(key)
            store.put(key, ((int.from_bytes(old, "big") if old else 0) + 1).to_bytes(8, "big"))
        store.flush()


def _usage_after(cache: BlockCache, tmp_path, n: int) -> tuple[int, int]:
    """Block-cache usage after n and after 3n commits."""
    store = RocksDBRawStore(str(tmp_path / f"db-{cache.capacity}"), cache)
    rnd = random.Random(7)
    try:
        _commits(store, n, rnd)
        at_n = store.property_int("rocksdb.block-cache-usage")
        _commits(store, 2 * n, rnd)
        at_3n = store.property_int("rocksdb.block-cache-usage")
    finally:
        store.close()
    assert at_n is not None and at_3n is not None
    return at_n, at_3n


def test_commits_fill_a_large_block_cache_but_not_a_bounded_one(tmp_path):
    # the workload does grow an unbounded-looking cache with the number of commits (the leak:
    # RocksDB's own default is 32 MiB per database, far above what 300 small commits fill) ...
    big_n, big_3n = _usage_after(BlockCache(64 * 1024 * 1024), tmp_path, 100)
    assert big_3n > 2.5 * big_n > 0, (big_n, big_3n)
    # ... while the bounded cache stops at its capacity: 3x the commits, no more memory
    n, three_n = _usage_after(BlockCache(SMALL_CACHE), tmp_path, 100)
    assert n > SMALL_CACHE * 0.8, "the capacity is reached within the first n commits"
    assert three_n <= SMALL_CACHE * 1.05, three_n
    assert three_n <= n * 1.05, (n, three_n)


def test_cache_size_config_key_and_default():
    base = {"stores.counts.factory": "rocksdb"}
    (spec,) = store_specs(Config(base), "log")
    assert spec.block_cache.capacity == DEFAULT_BLOCK_CACHE_BYTES
    (spec,) = store_specs(Config({**base, "stores.counts.container.cache.size.bytes": "1000000"}), "log")
    assert spec.block_cache.capacity == 1_000_000
    for bad in ("-1", "lots"):
        with pytest.raises(ConfigError, match=r"stores\.counts\.container\.cache\.size\.bytes"):
            store_specs(Config({**base, "stores.counts.container.cache.size.bytes": bad}), "log")


def test_container_tasks_share_one_bounded_block_cache(tmp_path):
    """A real container: 2 tasks, a RocksDB store with a changelog, a commit (and so a flush)
    every 10 ms. After n and after 3n messages the two tasks' databases use one cache of the
    configured capacity, and its usage stays within it."""
    n = 10_000
    config = Config(
        {
            "job.name": "memory",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "systems.log.log.synchronous": "OFF",
            "systems.log.samza.msg.serde": "string",
            "task.inputs": "log.words",
            "task.class": "tests.apps.tasks:WordCountTask",
            "task.commit.ms": "10",
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "long",
            "stores.counts.changelog": "log.memory-counts-changelog",
            "stores.counts.container.cache.size.bytes": str(SMALL_CACHE),
            "job.logged.store.base.dir": str(tmp_path / "state"),
        }
    )
    create_stream(config, "log", "words", 2)
    rnd = random.Random(3)
    produce(config, "log", "words", [(i % 2, None, rnd.choice(KEYS)) for i in range(3 * n)])

    container = SamzaContainer("0", job_model(config))
    thread = threading.Thread(target=container.run, daemon=True)
    thread.start()

    def stores_when_processed(count: int) -> list[RocksDBRawStore]:
        def processed() -> bool:
            assert thread.is_alive(), container.summary
            tasks = list(container.tasks.values())
            return bool(tasks) and sum(t.metrics.envelopes_processed for t in tasks) >= count

        wait_until(processed, 60, f"{count} messages processed", poll_s=0.01)
        return [t.task_stores.raw["counts"] for t in container.tasks.values()]

    try:
        usage = []
        for count in (n, 3 * n):
            stores = stores_when_processed(count)
            assert len(stores) == 2
            for store in stores:  # one shared cache of the configured size, not 32 MiB each
                assert store.property_int("rocksdb.block-cache-capacity") == SMALL_CACHE
            assert stores[0].block_cache is stores[1].block_cache
            usage.append(stores[0].property_int("rocksdb.block-cache-usage"))
        assert all(u is not None and u <= SMALL_CACHE * 1.05 for u in usage), usage
    finally:
        container.stop()
        thread.join(30)
    assert not thread.is_alive()
    assert container.summary.messages_processed >= 3 * n - 2, container.summary
