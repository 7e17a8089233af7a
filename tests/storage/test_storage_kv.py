"""KeyValueStore API on RocksDB and in-memory stores; changelog writes; partition checks."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config
from samza_dagster.serde import IntegerSerde, StringSerde
from samza_dagster.storage import (
    ChangelogPartitionMismatchError,
    InMemoryRawStore,
    LoggedStore,
    RocksDBRawStore,
    SerializedKeyValueStore,
    prepare_changelogs,
    state_base_dir,
    store_specs,
)
from samza_dagster.system import SystemStream, SystemStreamPartition, inmemory
from samza_dagster.system.inmemory import InMemorySystemFactory


@pytest.fixture(params=["rocksdb", "inmemory"])
def store(request, tmp_path):
    raw = RocksDBRawStore(str(tmp_path / "db")) if request.param == "rocksdb" else InMemoryRawStore()
    s = SerializedKeyValueStore("s", raw, StringSerde(), IntegerSerde())
    yield s
    s.close()


def test_get_put_delete(store):
    assert store.get("a") is None
    store.put("a", 1)
    assert store.get("a") == 1
    store.put("a", 2)
    assert store.get("a") == 2
    store.delete("a")
    assert store.get("a") is None
    store.put("b", 3)
    store.put("b", None)  # a None value deletes, as in Samza
    assert store.get("b") is None


def test_put_all_get_all_range_and_all_in_key_order(store):
    store.put_all([("c", 3), ("a", 1), ("e", 5), ("b", 2)])
    assert store.get_all(["a", "e", "zz"]) == {"a": 1, "e": 5}
    assert list(store.range("b", "e")) == [("b", 2), ("c", 3)]
    assert list(store.all()) == [("a", 1), ("b", 2), ("c", 3), ("e", 5)]
    store.flush()


def test_logged_store_sends_puts_and_tombstones_to_the_changelog_partition():
    inmemory.reset()
    config = Config({"systems.mem.samza.factory": "inmemory"})
    factory = InMemorySystemFactory()
    from samza_dagster.system import StreamSpec

    factory.get_admin("mem", config).create_stream(StreamSpec("cl", "cl", "mem", 3))
    producer = factory.get_producer("mem", config)
    producer.register("t")
    producer.start()
    store = SerializedKeyValueStore(
        "s", LoggedStore(InMemoryRawStore(), producer, "t", SystemStream("mem", "cl"), 2), StringSerde(), IntegerSerde()
    )
    store.put("k", 7)
    store.delete("k")
    producer.flush("t")
    consumer = factory.get_consumer("mem", config)
    ssp = SystemStreamPartition("mem", "cl", 2)
    consumer.register(ssp, "0")
    consumer.start()
    envs = consumer.poll([ssp], 1.0)[ssp]
    assert [(e.key, e.message) for e in envs] == [(b"k", b"\x00\x00\x00\x07"), (b"k", None)]
    inmemory.reset()


def test_changelog_with_wrong_partition_count_names_store_stream_and_counts():
    inmemory.reset()
    config = Config(
        {
            "systems.mem.samza.factory": "inmemory",
            "stores.counts.factory": "inmemory",
            "stores.counts.changelog": "mem.counts-cl",
        }
    )
    factory = InMemorySystemFactory()
    admin = factory.get_admin("mem", config)
    from samza_dagster.system import StreamSpec

    admin.create_stream(StreamSpec("counts-cl", "counts-cl", "mem", 2))
    specs = store_specs(config, "mem")
    with pytest.raises(
        ChangelogPartitionMismatchError, match=r"store 'counts'.*mem.counts-cl has 2 partitions.*4 tasks"
    ):
        prepare_changelogs(specs, {"mem": admin}, 4)
    prepare_changelogs(specs, {"mem": admin}, 2)  # matching count: fine
    inmemory.reset()


def test_state_dir_defaults_beside_the_log_root_and_honours_the_key(tmp_path):
    log_root = tmp_path / "log"
    cfg = Config({"systems.log.log.path": str(log_root)})
    assert state_base_dir(cfg, "log") == tmp_path / "log-state"
    cfg = cfg.with_overrides({"job.logged.store.base.dir": str(tmp_path / "s")})
    assert state_base_dir(cfg, "log") == tmp_path / "s"
