"""Retention and compaction seen by jobs: a checkpoint that retention overtook resets by
``samza.offset.default`` with one WARNING; a compacted changelog restores the same store."""

from __future__ import annotations

import logging
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from samza_dagster.config import Config
from samza_dagster.container import ContainerStatus, SamzaContainer
from samza_dagster.serde import LongSerde, StringSerde
from samza_dagster.storage import RocksDBRawStore
from samza_dagster.system import StreamSpec
from samza_dagster.system.log import LogSystemFactory
from tests.apps.harness import create_stream, job_model, produce, read_checkpoints

HOUR_MS = 3_600_000
WORDS = [f"w{i:02d}" for i in range(23)]


def _config(tmp_path: Path, **extra: str) -> Config:
    return Config(
        {
            "job.name": "retention",
            "job.default.system": "log",
            "task.inputs": "log.words",
            "task.class": "tests.apps.tasks:WordCountTask",
            "task.commit.ms": "100",
            "systems.log.samza.factory": "log",
            "systems.log.samza.msg.serde": "string",
            "systems.log.log.path": str(tmp_path / "log"),
            "systems.log.streams.words.samza.bounded": "true",
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "long",
            "stores.counts.changelog": "log.retention-counts-changelog",
            "job.logged.store.base.dir": str(tmp_path / "state"),
            **extra,
        }
    )


def _admin(config: Config):
    return LogSystemFactory().get_admin("log", config)


def _store_counts(tmp_path: Path) -> Counter:
    counts: Counter = Counter()
    kser, vser = StringSerde(), LongSerde()
    for task_dir in sorted((tmp_path / "state" / "retention-1" / "counts").iterdir()):
        raw = RocksDBRawStore(str(task_dir))
        for k, v in raw.all():
            counts[kser.from_bytes(k)] += vser.from_bytes(v)
        raw.close()
    return counts


@pytest.mark.parametrize(("default", "processed"), [("oldest", 5), ("upcoming", 0)])
def test_a_checkpoint_before_the_oldest_offset_resets_by_offset_default_with_one_warning(
    tmp_path, caplog, default, processed
):
    config = _config(tmp_path)
    admin = _admin(config)
    admin.create_stream(StreamSpec("words", "words", "log", 2, {"retention.ms": str(HOUR_MS)}))
    old = int(time.time() * 1000) - 2 * HOUR_MS
    produce(config, "log", "words", [(p, None, b"w00") for p in (0, 1) for _ in range(10)], event_time=old)
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 20  # checkpoint: offset 9

    # five more old messages and five young ones per partition; retention then removes 0..14
    produce(config, "log", "words", [(p, None, b"w01") for p in (0, 1) for _ in range(5)], event_time=old)
    produce(config, "log", "words", [(p, None, b"w02") for p in (0, 1) for _ in range(5)])
    assert admin.clean_stream("words").deleted == 30
    admin.stop()

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="samza_dagster.container.offset_reset"):
        config = config.with_overrides({"systems.log.samza.offset.default": default})
        summary = SamzaContainer("0", job_model(config)).run()
    assert summary.status is ContainerStatus.COMPLETED
    assert summary.messages_processed == 2 * processed
    warnings = [r.getMessage() for r in caplog.records if r.name == "samza_dagster.container.offset_reset"]
    start = 15 if default == "oldest" else 20
    assert sorted(warnings) == sorted(
        f"system log, stream words, partition {p}: the checkpoint resumes at offset 10, outside the partition's "
        f"offsets [15, 20] (retention removed it); skipping offsets [10, {start}) and starting at {start} "
        f"(samza.offset.default={default})"
        for p in (0, 1)
    )
    if processed:
        for p in (0, 1):
            assert read_checkpoints(config)[f"Partition {p}"].offsets[("log", "words", p)] == "19"


@pytest.mark.parametrize(("default", "processed"), [("oldest", 3), ("upcoming", 0)])
def test_a_checkpoint_past_the_end_of_a_recreated_stream_resets_by_offset_default_with_one_warning(
    tmp_path, caplog, default, processed
):
    """The stream was deleted and created again with fewer messages than the checkpoint covered:
    Kafka's offset out of range, reset the same way — never a job that silently waits at offset
    10 while the new messages sit at 0-2."""
    from samza_dagster.system.log.storage import stream_file

    config = _config(tmp_path)
    create_stream(config, "log", "words", 1)
    produce(config, "log", "words", [(0, None, b"w00")] * 10)
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 10  # checkpoint: offset 9
    Path(stream_file(str(tmp_path / "log"), "words")).unlink()
    create_stream(config, "log", "words", 1)
    produce(config, "log", "words", [(0, None, b"w01")] * 3)

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="samza_dagster.container.offset_reset"):
        config = config.with_overrides({"systems.log.samza.offset.default": default})
        summary = SamzaContainer("0", job_model(config)).run()
    assert summary.status is ContainerStatus.COMPLETED
    assert summary.messages_processed == processed
    skipped = "reading it again from the oldest offset" if default == "oldest" else "skipping offsets [0, 3)"
    start = 0 if default == "oldest" else 3
    assert [r.getMessage() for r in caplog.records if r.name == "samza_dagster.container.offset_reset"] == [
        "system log, stream words, partition 0: the checkpoint resumes at offset 10, outside the partition's "
        "offsets [0, 3] (the stream holds fewer messages than that: was it deleted and created again?); "
        f"{skipped} and starting at {start} (samza.offset.default={default})"
    ]


def test_a_checkpoint_inside_the_log_resumes_without_a_warning(tmp_path, caplog):
    config = _config(tmp_path)
    create_stream(config, "log", "words", 1)
    produce(config, "log", "words", [(0, None, b"w00")] * 10)
    SamzaContainer("0", job_model(config)).run()
    produce(config, "log", "words", [(0, None, b"w00")] * 10)
    with caplog.at_level(logging.WARNING, logger="samza_dagster.container.offset_reset"):
        assert SamzaContainer("0", job_model(config)).run().messages_processed == 10
    assert not [r for r in caplog.records if r.name == "samza_dagster.container.offset_reset"]


def test_a_compacted_changelog_restores_the_same_store(tmp_path):
    config = _config(tmp_path, **{"stores.counts.object.cache.size": "0"})  # every update in the changelog
    create_stream(config, "log", "words", 2)
    messages = [(i % 2, None, WORDS[(i * 7) % len(WORDS)].encode()) for i in range(20_000)]
    produce(config, "log", "words", messages)
    first = SamzaContainer("0", job_model(config))
    assert first.run().status is ContainerStatus.COMPLETED
    expected = Counter(m.decode() for _, _, m in messages)
    assert _store_counts(tmp_path) == expected

    admin = _admin(config)
    changelog = "retention-counts-changelog"
    before = admin.get_system_stream_metadata([changelog])[changelog]
    # past the changelog's compaction lag: everything superseded goes
    removed = admin.clean_stream(changelog, int(time.time() * 1000) + 2 * 600_000).deleted
    after = admin.get_system_stream_metadata([changelog])[changelog]
    admin.stop()
    assert removed == 20_000 - 2 * len(WORDS)
    assert {p: m.upcoming_offset for p, m in after.partitions.items()} == {
        p: m.upcoming_offset for p, m in before.partitions.items()
    }

    shutil.rmtree(tmp_path / "state")
    second = SamzaContainer("0", job_model(config))
    assert second.run().messages_processed == 0
    assert 0 < second.restored["counts"] <= 2 * len(WORDS)  # at most one entry per word per task
    assert _store_counts(tmp_path) == expected


@pytest.mark.kafka
@pytest.mark.parametrize(("default", "processed"), [("oldest", 5), ("upcoming", 0)])
def test_a_kafka_checkpoint_before_a_log_start_moved_by_delete_records_resets_by_offset_default(
    kafka_config, kafka_topic_prefix, tmp_path, caplog, default, processed
):
    """Kafka's DeleteRecords moves a partition's log start past the job's checkpoint (as retention
    does): the next run resets by ``samza.offset.default`` with one WARNING per partition."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    words = f"{kafka_topic_prefix}-words"
    config = kafka_config.with_overrides(
        {
            "job.name": kafka_topic_prefix,
            "job.default.system": "kafka",
            "task.inputs": f"kafka.{words}",
            "task.class": "tests.apps.tasks:WordCountTask",
            "task.commit.ms": "100",
            "systems.kafka.samza.msg.serde": "string",
            f"systems.kafka.streams.{words}.samza.bounded": "true",
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "long",
            "stores.counts.changelog": f"kafka.{kafka_topic_prefix}-counts-changelog",
            "job.logged.store.base.dir": str(tmp_path / "state"),
        }
    )
    create_stream(config, "kafka", words, 2)
    produce(config, "kafka", words, [(p, None, b"w00") for p in (0, 1) for _ in range(10)])
    assert SamzaContainer("0", job_model(config)).run().messages_processed == 20  # checkpoint: offset 9
    produce(config, "kafka", words, [(p, None, b"w01") for p in (0, 1) for _ in range(10)])
    admin = AdminClient({"bootstrap.servers": config.get_str("systems.kafka.consumer.bootstrap.servers")})
    deleted = admin.delete_records([TopicPartition(words, p, 15) for p in (0, 1)])
    assert all(future.result(30).low_watermark == 15 for future in deleted.values())  # the new log starts

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="samza_dagster.container.offset_reset"):
        config = config.with_overrides({"systems.kafka.samza.offset.default": default})
        summary = SamzaContainer("0", job_model(config)).run()
    assert summary.status is ContainerStatus.COMPLETED
    assert summary.messages_processed == 2 * processed
    warnings = sorted(r.getMessage() for r in caplog.records if r.name == "samza_dagster.container.offset_reset")
    start = 15 if default == "oldest" else 20
    assert len(warnings) == 2, warnings
    for p, warning in enumerate(warnings):
        assert f"system kafka, stream {words}, partition {p}: the checkpoint resumes at offset 10" in warning
        assert f"skipping offsets [10, {start}) and starting at {start} (samza.offset.default={default})" in warning
    if processed:
        for p in (0, 1):
            assert read_checkpoints(config)[f"Partition {p}"].offsets[("kafka", words, p)] == "19"
