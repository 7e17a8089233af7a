"""A stateful word count (RocksDB store with a changelog): stop mid-way, restart, final counts
and checkpoints right; the store is rebuilt from its changelog after its files are deleted."""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.container import ContainerStatus, SamzaContainer
from samza_dagster.serde import LongSerde, StringSerde
from samza_dagster.storage import RocksDBRawStore
from support.waiting import wait_until
from tests.apps.harness import create_stream, job_model, produce, read_checkpoints

PARTITIONS = 4
WORDS = [f"w{i:02d}" for i in range(37)]


def _words(n: int) -> list[tuple[int, None, bytes]]:
    return [(i % PARTITIONS, None, WORDS[(i * 7 + i // 5) % len(WORDS)].encode()) for i in range(n)]


def _config(tmp_path: Path, system: str = "log", bounded: bool = True, **extra: str) -> Config:
    entries = {
        "job.name": "wordcount",
        "job.default.system": system,
        "task.inputs": f"{system}.words",
        "task.class": "tests.apps.tasks:WordCountTask",
        "task.commit.ms": "100",
        f"systems.{system}.samza.msg.serde": "string",
        "stores.counts.factory": "rocksdb",
        "stores.counts.key.serde": "string",
        "stores.counts.msg.serde": "long",
        "stores.counts.changelog": f"{system}.wordcount-counts-changelog",
        "job.logged.store.base.dir": str(tmp_path / "state"),
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
    }
    if bounded:
        entries[f"systems.{system}.streams.words.samza.bounded"] = "true"
    entries.update(extra)
    return Config(entries)


def _store_counts(tmp_path: Path) -> Counter:
    counts: Counter = Counter()
    kser, vser = StringSerde(), LongSerde()
    for task_dir in sorted((tmp_path / "state" / "wordcount-1" / "counts").iterdir()):
        raw = RocksDBRawStore(str(task_dir))
        for k, v in raw.all():
            counts[kser.from_bytes(k)] += vser.from_bytes(v)
        raw.close()
    return counts


def _run_until(config: Config, processed_at_least: int) -> SamzaContainer:
    container = SamzaContainer("0", job_model(config))
    thread = threading.Thread(target=container.run)
    thread.start()
    try:
        wait_until(
            lambda: sum(ti.metrics.envelopes_processed for ti in list(container.tasks.values())) >= processed_at_least,
            60,
            f"{processed_at_least} messages processed",
            poll_s=0.01,
        )
    finally:
        container.stop()
        thread.join(30)
    assert not thread.is_alive()
    return container


def test_word_count_survives_a_restart_and_a_lost_state_directory(tmp_path):
    n = 100_000
    messages = _words(n)
    expected = Counter(m.decode() for _, _, m in messages)
    config = _config(tmp_path, bounded=False)
    create_stream(config, "log", "words", PARTITIONS)
    produce(config, "log", "words", messages)

    first = _run_until(config, 40_000)
    assert first.summary.status is ContainerStatus.SHUTDOWN
    done_first = first.summary.messages_processed
    assert 40_000 <= done_first < n, done_first
    cps = read_checkpoints(config)
    assert sum(int(o) + 1 for cp in cps.values() for o in cp.offsets.values()) == done_first
    for _name, cp in cps.items():
        ((ssp, offset),) = cp.changelog_offsets.values()
        assert ssp.stream == "wordcount-counts-changelog" and offset is not None

    bounded = _config(tmp_path, bounded=True)
    second = SamzaContainer("0", job_model(bounded))
    summary = second.run()
    assert summary.status is ContainerStatus.COMPLETED
    assert summary.messages_processed == n - done_first
    assert second.restored.get("counts", 0) > 0, "the store was restored from its changelog"
    assert _store_counts(tmp_path) == expected
    cps = read_checkpoints(bounded)
    for p in range(PARTITIONS):
        assert cps[f"Partition {p}"].offsets[("log", "words", p)] == str(n // PARTITIONS - 1)

    shutil.rmtree(tmp_path / "state")
    third = SamzaContainer("0", job_model(bounded))
    assert third.run().messages_processed == 0
    assert _store_counts(tmp_path) == expected, "rebuilt from the changelog after the files were lost"


def test_word_count_on_kafka_restores_from_the_changelog_topic(kafka_config, kafka_topic_prefix, tmp_path):
    words = f"{kafka_topic_prefix}-words"
    changelog = f"{kafka_topic_prefix}-counts-changelog"
    config = kafka_config.with_overrides(
        {
            "job.name": kafka_topic_prefix,
            "job.default.system": "kafka",
            "task.inputs": f"kafka.{words}",
            "task.class": "tests.apps.tasks:WordCountTask",
            "systems.kafka.samza.msg.serde": "string",
            f"systems.kafka.streams.{words}.samza.bounded": "true",
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "long",
            "stores.counts.changelog": f"kafka.{changelog}",
            "job.logged.store.base.dir": str(tmp_path / "state"),
        }
    )
    create_stream(config, "kafka", words, 2)
    batch1 = [(i % 2, None, WORDS[i % 5].encode()) for i in range(300)]
    produce(config, "kafka", words, batch1)
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 300

    batch2 = [(i % 2, None, WORDS[i % 3].encode()) for i in range(200)]
    produce(config, "kafka", words, batch2)
    shutil.rmtree(tmp_path / "state")
    container = SamzaContainer("0", job_model(config))
    assert container.run().messages_processed == 200
    assert container.restored.get("counts", 0) > 0

    expected = Counter(m.decode() for _, _, m in batch1 + batch2)
    counts: Counter = Counter()
    kser, vser = StringSerde(), LongSerde()
    for task_dir in (tmp_path / "state" / f"{kafka_topic_prefix}-1" / "counts").iterdir():
        raw = RocksDBRawStore(str(task_dir))
        for k, v in raw.all():
            counts[kser.from_bytes(k)] += vser.from_bytes(v)
        raw.close()
    assert counts == expected
    cps = read_checkpoints(config)
    assert cps["Partition 1"].offsets[("kafka", words, 1)] == "249"
