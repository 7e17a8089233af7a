"""Issue 12.1 — transactional state restore, checked directly on the storage layer (real log
system files, real RocksDB): restore stops at the checkpointed changelog offset, later entries
are trimmed so a later restore cannot pick them up, a task without a checkpoint starts empty,
a checkpoint without the store's offset restores everything."""

from __future__ import annotations

from pathlib import Path

from samza_dagster.checkpoint import Checkpoint
from samza_dagster.config import Config
from samza_dagster.model import SystemStreamPartition
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.storage import TaskStores, prepare_changelogs, restore_stores, store_specs
from samza_dagster.system.log import LogSystemFactory

TASK = "Partition 0"
CL = SystemStreamPartition("log", "t-counts-changelog", 0)


def _config(tmp_path: Path) -> Config:
    return Config(
        {
            "job.name": "t",
            "systems.log.log.path": str(tmp_path / "log"),
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "json",
            "stores.counts.changelog": "log.t-counts-changelog",
        }
    )


class _Env:
    def __init__(self, tmp_path: Path) -> None:
        self.config = _config(tmp_path)
        self.factory = LogSystemFactory()
        self.admin = self.factory.get_admin("log", self.config)
        self.specs = store_specs(self.config, "log")
        prepare_changelogs(self.specs, {"log": self.admin}, 1)
        self.base = tmp_path / "state"

    def open(self, checkpoints: dict | None) -> tuple[TaskStores, object, dict]:
        producer = self.factory.get_producer("log", self.config)
        producer.register(TASK)
        producer.start()
        ts = TaskStores(TASK, 0, self.specs, SerdeRegistry(self.config), self.base, {"log": producer})
        restored = restore_stores(
            [ts], {"log": self.admin}, lambda s: self.factory.get_consumer(s, self.config), checkpoints
        )
        return ts, producer, restored

    def commit(self, ts: TaskStores, producer) -> Checkpoint:
        """What the container's commit does for the store part: flush, then record the newest
        changelog offset."""
        ts.flush()
        producer.flush(TASK)
        newest = self.admin.get_system_stream_metadata([CL.stream])[CL.stream].partitions[0].newest_offset
        return Checkpoint({}, {"counts": (CL, newest)})

    @staticmethod
    def close(ts: TaskStores, producer) -> None:
        producer.flush(TASK)
        ts.close()
        producer.stop()


def _contents(ts: TaskStores) -> dict:
    return dict(ts.stores["counts"].all())


def test_restore_stops_at_the_checkpoint_and_trims_later_writes(tmp_path):
    env = _Env(tmp_path)
    ts, producer, _ = env.open({})
    store = ts.stores["counts"]
    store.put("a", 1)
    store.put("b", 1)
    checkpoint = env.commit(ts, producer)
    # uncommitted work: it reaches the changelog but no checkpoint covers it (crash here)
    store.put("a", 2)
    store.delete("b")
    store.put("c", 9)
    env.close(ts, producer)

    ts, producer, restored = env.open({TASK: checkpoint})
    assert _contents(ts) == {"a": 1, "b": 1}
    assert restored == {"counts": 2}
    # the run goes on: commits a little (but not the keys the crashed run touched)
    ts.stores["counts"].put("d", 4)
    second = env.commit(ts, producer)
    env.close(ts, producer)

    # a later restore to the newer checkpoint must not resurrect a=2, b deleted, c=9
    ts, producer, _ = env.open({TASK: second})
    assert _contents(ts) == {"a": 1, "b": 1, "d": 4}
    env.close(ts, producer)


def test_task_without_checkpoint_restores_empty_and_tombstones_everything(tmp_path):
    env = _Env(tmp_path)
    ts, producer, _ = env.open({})
    ts.stores["counts"].put("x", 1)  # written, never checkpointed
    env.close(ts, producer)
    ts, producer, restored = env.open({})
    assert _contents(ts) == {}
    assert restored == {"counts": 0}
    env.close(ts, producer)
    # the whole changelog replayed (no checkpoints passed) also ends empty: x was tombstoned
    ts, producer, _ = env.open(None)
    assert _contents(ts) == {}
    env.close(ts, producer)


def test_checkpoint_without_the_store_restores_the_whole_changelog(tmp_path):
    env = _Env(tmp_path)
    ts, producer, _ = env.open({})
    ts.stores["counts"].put("x", 1)
    ts.stores["counts"].put("y", 2)
    env.close(ts, producer)
    # a checkpoint from before the store existed (no changelog_offsets entry for it)
    ts, producer, _ = env.open({TASK: Checkpoint({}, {})})
    assert _contents(ts) == {"x": 1, "y": 2}
    env.close(ts, producer)


def test_checkpoint_with_empty_changelog_offset_restores_nothing(tmp_path):
    env = _Env(tmp_path)
    ts, producer, _ = env.open({})
    empty = env.commit(ts, producer)  # committed before any write: offset None
    assert empty.changelog_offsets["counts"][1] is None
    ts.stores["counts"].put("x", 1)
    env.close(ts, producer)
    ts, producer, _ = env.open({TASK: empty})
    assert _contents(ts) == {}
    env.close(ts, producer)
