"""The operator runtime on the log system: seed 002's Listings 1 and 2 as running jobs, and a
bounded two-stage application that ends by itself through in-band end-of-stream."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from samza_dagster.config import Config
from samza_dagster.operators import run_application
from samza_dagster.system.factories import system_factory
from samza_dagster.system.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition

pytestmark = pytest.mark.timeout(120)


def base(tmp_path, name: str, app: str, **extra: str) -> Config:
    entries = {
        "job.name": name,
        "job.default.system": "log",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "app.class": f"tests.hl_apps.apps:{app}",
        "task.commit.ms": "500",
        "app.store.factory": "inmemory",
    }
    entries.update(extra)
    return Config(entries)


def create(config: Config, stream: str, partitions: int) -> None:
    admin = system_factory(config, "log").get_admin("log", config)
    admin.create_stream(StreamSpec(stream, stream, "log", partitions))


def produce(config: Config, stream: str, rows, event_times=None) -> None:
    """rows: (partition, key or None, json-able message)."""
    producer = system_factory(config, "log").get_producer("log", config)
    producer.register("t")
    producer.start()
    ss = SystemStream("log", stream)
    for i, (p, key, msg) in enumerate(rows):
        et = event_times[i] if event_times is not None else None
        k = None if key is None else json.dumps(key).encode()
        producer.send("t", OutgoingMessageEnvelope(ss, json.dumps(msg).encode(), k, None, p, et))
    producer.flush("t")
    producer.stop()


def read_all(config: Config, stream: str) -> list[tuple[object, object]]:
    factory = system_factory(config, "log")
    admin = factory.get_admin("log", config)
    md = admin.get_system_stream_metadata([stream])[stream]
    consumer = factory.get_consumer("log", config)
    wanted = {}
    for p, pm in md.partitions.items():
        if pm.newest_offset is not None:
            ssp = SystemStreamPartition("log", stream, p)
            consumer.register(ssp, pm.oldest_offset)
            wanted[ssp] = int(pm.newest_offset)
    consumer.start()
    out = []
    try:
        while wanted:
            for ssp, envs in consumer.poll(set(wanted), 0.2).items():
                for env in envs:
                    if env.is_end_of_stream:
                        continue
                    out.append((json.loads(env.key) if env.key else None, json.loads(env.message)))
                    if int(env.offset) >= wanted.get(ssp, 1 << 60):
                        wanted.pop(ssp, None)
    finally:
        consumer.stop()
    return out


def bounded(config: Config, *streams: str) -> Config:
    return config.with_overrides({f"systems.log.streams.{s}.samza.bounded": "true" for s in streams})


def test_listing1_stream_stream_join_after_filter(tmp_path):
    cfg = bounded(base(tmp_path, "l1", "StreamStreamJoinApp"), "S1", "S2")
    create(cfg, "S1", 2)
    create(cfg, "S2", 2)
    create(cfg, "S3", 2)
    # profiles first on S2, page views on S1 (co-partitioned by user: partition = user % 2)
    produce(cfg, "S2", [(u % 2, None, {"user": u, "name": f"n{u}"}) for u in range(6)])
    produce(cfg, "S1", [(u % 2, None, {"user": u, "page": f"p{u}-{i}", "ok": i != 1}) for u in range(6) for i in range(3)])
    run = run_application(cfg, timeout_s=60)
    assert all(s.status.name == "COMPLETED" for s in run.summaries)
    got = sorted((k, v["page"], v["name"]) for k, v in read_all(cfg, "S3"))
    # the filter drops i == 1; every surviving view joins its user's profile
    assert got == sorted((u, f"p{u}-{i}", f"n{u}") for u in range(6) for i in (0, 2))


def test_listing2_partition_by_into_table_joined_with_stream(tmp_path):
    cfg = bounded(base(tmp_path, "l2", "StreamTableJoinApp"), "S1", "S2")
    create(cfg, "S1", 3)  # not co-partitioned with S2: partition_by re-partitions it into 2
    create(cfg, "S2", 2)
    create(cfg, "S3", 2)
    produce(cfg, "S1", [(u % 3, None, {"user": u, "name": f"n{u}"}) for u in range(8)])
    run = run_application(cfg.with_overrides({"systems.log.streams.S2.samza.bounded": "true"}), timeout_s=60)
    assert all(s.status.name == "COMPLETED" for s in run.summaries)
    plan = run.prepared.plan
    assert plan.intermediate_streams == {"l2-1-partition_by-p1": 2}
    # the table is filled; now page views joined against it (a second run resumes from checkpoints)
    produce(cfg, "S2", [(p, json.loads(json.dumps(u)), {"user": u, "page": f"v{u}"}) for u in range(8) for p in [_kafka_partition(u, 2)]])
    run_application(cfg, timeout_s=60)
    got = sorted((k, v["page"], v["name"]) for k, v in read_all(cfg, "S3"))
    assert got == [(u, f"v{u}", f"n{u}") for u in range(8)]


def _kafka_partition(key, partitions: int) -> int:
    from samza_dagster.system.partitioner import partition_for_key

    return partition_for_key(json.dumps(key).encode(), partitions)


def test_two_stage_bounded_count_terminates_with_exact_counts(tmp_path):
    cfg = bounded(base(tmp_path, "wc", "TwoStageCountApp", **{"job.intermediate.stream.partitions": "3"}), "words")
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    words = [f"w{i % 7}" for i in range(200)]
    produce(cfg, "words", [(i % 4, None, w) for i, w in enumerate(words)])
    run = run_application(cfg, timeout_s=60)
    assert all(s.status.name == "COMPLETED" for s in run.summaries)
    assert run.prepared.plan.intermediate_streams == {"wc-1-partition_by-by-word": 3}
    got = read_all(cfg, "counts")
    assert dict(got) == dict(Counter(words))
    assert len(got) == 7  # each window fired exactly once
