"""The embedded log's ``offsets_for_times`` (Kafka semantics: the earliest offset whose timestamp
is at or after the one asked for) against a brute-force answer: non-monotone timestamps, indexing
in several chunks and catching up after appends, both table layouts (a format 1 file gets the
index tables on its first lookup), rows removed after they were indexed (as retention and
compaction remove them), partitions and streams that do not exist."""

from __future__ import annotations

import random
import sqlite3

import pytest

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.log import LogSystemFactory, storage, time_index
from samza_dagster.system.log.formats import FORMATS
from support.log_reading import delete_rows, file_rows


@pytest.fixture
def log(tmp_path):
    root = str(tmp_path / "log")
    config = Config({"systems.log.samza.factory": "log", "systems.log.log.path": root})
    factory = LogSystemFactory()
    admin = factory.get_admin("log", config)
    yield factory, config, admin, root
    admin.stop()


def _produce(factory, config, stream: str, timestamps: list[int], partition: int = 0) -> None:
    producer = factory.get_producer("log", config)
    producer.register("t")
    for ts in timestamps:
        producer.send(
            "t", OutgoingMessageEnvelope(SystemStream("log", stream), b"x", partition=partition, event_time=ts)
        )
    producer.stop()


def _rows(root: str, stream: str, partition: int) -> list[tuple[int, int]]:
    return [(offset, ts) for offset, _key, _value, ts in file_rows(storage.stream_file(root, stream), partition)]


def _expected(rows: list[tuple[int, int]], ts: int) -> str | None:
    return next((str(o) for o, t in rows if t >= ts), None)


def _check_all(admin, root: str, stream: str, partition: int, probes) -> None:
    rows = _rows(root, stream, partition)
    ssp = SystemStreamPartition("log", stream, partition)
    for ts in probes:
        assert admin.offsets_for_times({ssp: ts})[ssp] == _expected(rows, ts), ts


def test_non_monotone_timestamps_in_chunks_and_after_appends(log, monkeypatch):
    factory, config, admin, root = log
    monkeypatch.setattr(time_index, "CHUNK", 97)  # indexing spans many transactions
    admin.create_stream(StreamSpec("s", "s", "log", 2))
    rnd = random.Random(21)
    _produce(factory, config, "s", [1000 + i * 3 + rnd.randint(-40, 40) for i in range(1000)])
    probes = [-1, 0, 959, 1000, 1500, 2500, 3999, 4100, 10_000] + [rnd.randint(900, 4100) for _ in range(200)]
    _check_all(admin, root, "s", 0, probes)
    # appended later, some far in the past: the index catches up with only the new rows
    _produce(factory, config, "s", [5000, 10, 6000, 5500, 7000])
    _check_all(admin, root, "s", 0, probes + [5000, 5001, 5999, 6500, 7000, 7001])
    # an empty partition has no offset for any time
    ssp1 = SystemStreamPartition("log", "s", 1)
    assert admin.offsets_for_times({ssp1: 0}) == {ssp1: None}


def test_a_format_1_file_gets_its_index_tables_on_the_first_lookup(log):
    factory, config, admin, root = log
    import os

    os.makedirs(root, exist_ok=True)
    conn = sqlite3.connect(storage.stream_file(root, "legacy"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(storage.META_SCHEMA)
    for statement in FORMATS[1].schema:
        conn.execute(statement)
    conn.execute("INSERT INTO meta (name, value) VALUES ('partition_count', '1')")
    conn.executemany(FORMATS[1].insert_sql, [(0, o, None, b"v", t) for o, t in enumerate([50, 10, 70, 60, 90])])
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert "time_index" not in tables
    _check_all(admin, root, "legacy", 0, [0, 10, 50, 51, 65, 70, 71, 90, 91])
    with sqlite3.connect(storage.stream_file(root, "legacy")) as check:
        tables = {r[0] for r in check.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"time_index", "time_index_state"} <= tables
        assert check.execute("SELECT value FROM meta WHERE name = 'format'").fetchone() is None  # still format 1


def test_rows_removed_after_indexing_are_skipped(log):
    factory, config, admin, root = log
    admin.create_stream(StreamSpec("r", "r", "log", 1))
    _produce(factory, config, "r", [100, 200, 150, 300, 250, 400, 350, 500])
    _check_all(admin, root, "r", 0, [0, 100, 201, 300, 301, 500])  # indexed
    # retention drops the head, compaction a row in the middle (the index row of 300 among them)
    delete_rows(storage.stream_file(root, "r"), 0, [0, 1, 3])
    admin.stop()
    _check_all(admin, root, "r", 0, [0, 100, 160, 201, 260, 300, 301, 351, 401, 500, 501])


def test_unknown_partition_and_stream_are_named(log):
    factory, config, admin, root = log
    admin.create_stream(StreamSpec("s", "s", "log", 2))
    with pytest.raises(ValueError, match="stream 's' has no partition 5 \\(it has 2\\)"):
        admin.offsets_for_times({SystemStreamPartition("log", "s", 5): 0})
    with pytest.raises(StreamNotFoundError, match="nope"):
        admin.offsets_for_times({SystemStreamPartition("log", "nope", 0): 0})


def test_after_the_log_cleaner_removed_indexed_rows(log):
    """The real cleaner (retention by time, then compaction) removes rows the index points at."""
    factory, config, admin, root = log
    hour = 3_600_000
    admin.create_stream(
        StreamSpec(
            "c",
            "c",
            "log",
            1,
            {"cleanup.policy": "compact,delete", "retention.ms": str(hour), "min.compaction.lag.ms": "0"},
        )
    )
    producer = factory.get_producer("log", config)
    producer.register("t")
    now = 100 * hour
    # keys a/b/c repeat: compaction keeps the newest of each; the first two are past retention
    rows = [
        (b"a", now - 3 * hour),
        (b"b", now - 2 * hour),
        (b"a", now - 30_000),
        (b"c", now - 20_000),
        (b"b", now - 25_000),
        (b"a", now - 10_000),
        (b"d", now - 15_000),
        (b"c", now - 5_000),
    ]
    for key, ts in rows:
        producer.send("t", OutgoingMessageEnvelope(SystemStream("log", "c"), b"v", key=key, partition=0, event_time=ts))
    producer.stop()
    probes = [0, now - 3 * hour, now - hour, now - 30_000, now - 25_000, now - 21_000, now - 12_000, now - 5_000, now]
    _check_all(admin, root, "c", 0, probes)  # indexes every row
    stats = admin.clean_stream("c", now_ms=now)
    assert stats.deleted > 0
    assert len(_rows(root, "c", 0)) < len(rows)
    _check_all(admin, root, "c", 0, probes)
