"""The write-back store cache (storage/cached.py, Samza's CachedStore) on real RocksDB stores
with a changelog on the real log system: one changelog message per key per flush, a
consistent read view over dirty and clean entries, write-down on batch size and eviction, and
a crash that loses only unflushed cache state, never anything a checkpoint covers."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from samza_dagster.checkpoint import Checkpoint
from samza_dagster.config import Config, ConfigError
from samza_dagster.errors import ReadTimeoutError
from samza_dagster.model import SystemStreamMetadata, SystemStreamPartition, SystemStreamPartitionMetadata
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.storage import CachedStore, TaskStores, prepare_changelogs, restore_stores, store_specs
from samza_dagster.storage.restore import RESTORE_TIMEOUT_S
from samza_dagster.system.log import LogSystemFactory

TASK = "Partition 0"
CL = SystemStreamPartition("log", "t-counts-changelog", 0)
_FRESH: dict = {}  # a first start: no checkpoints


class _Env:
    """One task's stores over a log-system changelog, opened and committed as the container does."""

    def __init__(self, tmp_path: Path, **store_config: str) -> None:
        self.config = Config(
            {
                "job.name": "t",
                "systems.log.log.path": str(tmp_path / "log"),
                "stores.counts.factory": "rocksdb",
                "stores.counts.key.serde": "string",
                "stores.counts.msg.serde": "json",
                "stores.counts.changelog": "log.t-counts-changelog",
                **{f"stores.counts.{k.replace('_', '.')}": v for k, v in store_config.items()},
            }
        )
        self.factory = LogSystemFactory()
        self.admin = self.factory.get_admin("log", self.config)
        self.specs = store_specs(self.config, "log")
        prepare_changelogs(self.specs, {"log": self.admin}, 1)
        self.base = tmp_path / "state"

    def open(self, checkpoints: dict | None = _FRESH) -> tuple[TaskStores, object]:
        """``checkpoints`` as ``restore_stores`` takes them (None: the whole changelog)."""
        producer = self.factory.get_producer("log", self.config)
        producer.register(TASK)
        producer.start()
        ts = TaskStores(TASK, 0, self.specs, SerdeRegistry(self.config), self.base, {"log": producer})
        restore_stores([ts], {"log": self.admin}, lambda s: self.factory.get_consumer(s, self.config), checkpoints)
        return ts, producer

    def newest(self) -> str | None:
        return self.admin.get_system_stream_metadata([CL.stream])[CL.stream].partitions[0].newest_offset

    def commit(self, ts: TaskStores, producer) -> Checkpoint:
        """The container's commit order for the store part: flush stores, flush producers,
        then record the newest changelog offset."""
        ts.flush()
        producer.flush(TASK)
        return Checkpoint({}, {"counts": (CL, self.newest())})

    def changelog(self, producer) -> list[tuple[str, object]]:
        """Every changelog entry so far, (key, value or None), read back through a consumer."""
        producer.flush(TASK)
        newest = self.newest()
        if newest is None:
            return []
        consumer = self.factory.get_consumer("log", self.config)
        consumer.register(CL, "0")
        consumer.start()
        entries = []
        try:
            deadline = time.monotonic() + 10
            while not entries or int(entries[-1][0]) < int(newest):
                assert time.monotonic() < deadline, "changelog not read back in 10 s"
                for env in consumer.poll([CL], 0.1).get(CL, []):
                    entries.append((env.offset, env.key, env.message))
        finally:
            consumer.stop()
        return [(k.decode(), None if m is None else m.decode()) for _, k, m in entries]


def test_repeated_puts_to_one_key_send_one_changelog_message_per_flush(tmp_path):
    env = _Env(tmp_path)
    ts, producer = env.open()
    store = ts.stores["counts"]
    for i in range(1, 101):
        store.put("hot", i)
    store.put("cold", 1)
    assert env.changelog(producer) == [], "nothing reaches the changelog before the flush"
    env.commit(ts, producer)
    assert env.changelog(producer) == [("hot", "100"), ("cold", "1")]
    for i in range(101, 151):
        store.put("hot", i)
    store.delete("cold")
    env.commit(ts, producer)
    assert env.changelog(producer)[2:] == [("hot", "150"), ("cold", None)]
    env.commit(ts, producer)  # nothing dirty: nothing sent
    assert len(env.changelog(producer)) == 4
    assert ts.logged["counts"].writes == 4 and ts.cached["counts"].written == 4
    ts.close()
    producer.stop()


def test_reads_see_cached_writes_deletes_and_a_consistent_range(tmp_path):
    env = _Env(tmp_path)
    ts, producer = env.open()
    store, raw = ts.stores["counts"], ts.raw["counts"]
    for key in "abcde":
        store.put(key, ord(key))
    env.commit(ts, producer)  # a..e clean in the cache and in RocksDB
    store.put("b", 20)  # dirty overwrite
    store.delete("c")  # dirty tombstone
    store.put("f", 6)  # dirty new key
    store.put("g", 7)
    store.delete("g")  # a key put then deleted before any flush
    assert raw.get(b"b") == b"98" and raw.get(b"f") is None, "dirty entries stay in the cache"
    assert store.get("b") == 20 and store.get("c") is None and store.get("f") == 6 and store.get("g") is None
    assert store.get_all(["a", "b", "c", "f", "zz"]) == {"a": 97, "b": 20, "f": 6}
    # range/all see dirty and clean entries together, in key order, without the deleted ones
    assert list(store.range("b", "f")) == [("b", 20), ("d", 100), ("e", 101)]
    assert dict(store.all()) == {"a": 97, "b": 20, "d": 100, "e": 101, "f": 6}
    # writes after an iteration started are still read back
    store.put("a", 1)
    assert store.get("a") == 1 and dict(store.all())["a"] == 1
    ts.close()
    producer.stop()


def test_missing_keys_are_cached_and_a_delete_of_a_cached_miss_is_still_logged(tmp_path):
    env = _Env(tmp_path)
    ts, producer = env.open()
    store, cached = ts.stores["counts"], ts.cached["counts"]
    assert store.get("nope") is None and store.get("nope") is None
    assert (cached.misses, cached.hits) == (1, 1)
    store.delete("nope")
    env.commit(ts, producer)
    assert env.changelog(producer) == [("nope", None)]
    ts.close()
    producer.stop()


def test_dirty_entries_are_written_down_when_the_batch_is_full(tmp_path):
    env = _Env(tmp_path, object_cache_size="10", write_batch_size="3")
    ts, producer = env.open()
    store, raw = ts.stores["counts"], ts.raw["counts"]
    store.put("a", 1)
    store.put("a", 2)
    store.put("b", 1)
    assert env.changelog(producer) == [] and raw.get(b"a") is None
    store.put("c", 1)  # third dirty key: the batch goes down, to RocksDB and the changelog
    assert env.changelog(producer) == [("a", "2"), ("b", "1"), ("c", "1")]
    assert raw.get(b"a") == b"2" and ts.cached["counts"].dirty_count == 0
    ts.close()
    producer.stop()


def test_eviction_writes_the_evicted_dirty_entry(tmp_path):
    env = _Env(tmp_path, object_cache_size="3", write_batch_size="3")
    ts, producer = env.open()
    store, raw, cached = ts.stores["counts"], ts.raw["counts"], ts.cached["counts"]
    store.put("a", 1)  # dirty, least recently used from here on
    assert store.get("b") is None and store.get("c") is None  # clean misses fill the cache
    assert raw.get(b"a") is None
    assert store.get("d") is None  # a fourth entry evicts "a", which is dirty: written down
    assert raw.get(b"a") == b"1" and env.changelog(producer) == [("a", "1")]
    assert len(cached) == 3 and cached.dirty_count == 0
    assert store.get("a") == 1  # read back from RocksDB after the eviction
    ts.close()
    producer.stop()


def test_a_crash_loses_only_unflushed_cache_state_and_no_checkpoint_covers_it(tmp_path):
    env = _Env(tmp_path, object_cache_size="100", write_batch_size="4")
    ts, producer = env.open()
    store = ts.stores["counts"]
    for i in range(10):
        store.put("x", i)
    store.put("y", 1)
    checkpoint = env.commit(ts, producer)
    assert checkpoint.changelog_offsets["counts"][1] == "1", "the checkpoint covers both flushed entries"
    # uncommitted work: a full batch goes down to the changelog (after the checkpoint's offset),
    # the rest only sits in the cache
    for key in "abcd":
        store.put(key, 1)
    store.put("x", 99)
    store.put("y", 99)
    assert [k for k, _ in env.changelog(producer)] == ["x", "y", "a", "b", "c", "d"]
    # crash: the process dies without flushing the cache or committing
    ts.raw["counts"].close()
    producer.stop()

    ts, producer = env.open({TASK: checkpoint})
    assert dict(ts.stores["counts"].all()) == {"x": 9, "y": 1}, "exactly the checkpointed state"
    # and the batch written after the checkpoint was trimmed: a later full restore agrees
    ts.close()
    producer.stop()
    ts, producer = env.open(None)
    assert dict(ts.stores["counts"].all()) == {"x": 9, "y": 1}
    ts.close()
    producer.stop()


class _AdminPastTheEnd:
    """The real log admin, but reporting a newest changelog offset far past what the stream
    holds: as a changelog that lost its tail (or a broker that went away) looks to a restore."""

    def __init__(self, admin) -> None:
        self._admin = admin

    def get_system_stream_metadata(self, streams):
        out = {}
        for name, meta in self._admin.get_system_stream_metadata(streams).items():
            parts = {
                p: SystemStreamPartitionMetadata(m.oldest_offset, "1000000", "1000001")
                for p, m in meta.partitions.items()
            }
            out[name] = SystemStreamMetadata(name, parts)
        return out


def test_a_restore_that_cannot_reach_the_changelogs_newest_offset_fails_naming_it_at_its_deadline(tmp_path):
    env = _Env(tmp_path)
    ts, producer = env.open()
    ts.stores["counts"].put("x", 1)
    env.commit(ts, producer)
    ts.close()
    producer.stop()
    assert RESTORE_TIMEOUT_S == 600.0  # the default deadline, documented in docs/operations.md

    producer = env.factory.get_producer("log", env.config)
    ts = TaskStores(TASK, 0, env.specs, SerdeRegistry(env.config), env.base, {"log": producer})
    started = time.monotonic()
    with pytest.raises(
        ReadTimeoutError,
        match=re.escape("restoring changelogs ['SystemStreamPartition [log, t-counts-changelog, 0]'] timed out"),
    ):
        restore_stores(
            [ts],
            {"log": _AdminPastTheEnd(env.admin)},
            lambda s: env.factory.get_consumer(s, env.config),
            None,
            timeout_s=0.5,
        )
    assert time.monotonic() - started < 60, "the caller's deadline, not the 600 s default"
    assert dict(ts.stores["counts"].all()) == {"x": 1}, "what the changelog holds was applied before the deadline"
    ts.close()


def test_a_zero_cache_size_disables_the_cache(tmp_path):
    env = _Env(tmp_path, object_cache_size="0")
    ts, producer = env.open()
    assert ts.cached == {}
    ts.stores["counts"].put("k", 1)
    ts.stores["counts"].put("k", 2)
    assert env.changelog(producer) == [("k", "1"), ("k", "2")]
    ts.close()
    producer.stop()


def test_cache_config_errors_name_the_key(tmp_path):
    base = {"stores.s.factory": "inmemory"}
    with pytest.raises(ConfigError, match="stores.s.write.batch.size"):
        store_specs(Config({**base, "stores.s.object.cache.size": "10", "stores.s.write.batch.size": "11"}), "log")
    with pytest.raises(ConfigError, match="stores.s.object.cache.size"):
        store_specs(Config({**base, "stores.s.object.cache.size": "-1"}), "log")
    with pytest.raises(ConfigError, match="stores.s.write.batch.size"):
        store_specs(Config({**base, "stores.s.write.batch.size": "0"}), "log")
    # a small cache alone lowers the default batch to it; the defaults otherwise
    (small,) = store_specs(Config({**base, "stores.s.object.cache.size": "7"}), "log")
    assert (small.cache_size, small.batch_size) == (7, 7)
    (default,) = store_specs(Config(base), "log")
    assert (default.cache_size, default.batch_size) == (10_000, 5_000)
    with pytest.raises(ValueError, match="write batch size"):
        CachedStore(None, 2, 3)
