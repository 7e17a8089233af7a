"""Retention and compaction of the embedded log on real SQLite files: what a pass removes and
keeps, offsets never reused, readers during cleaning, the producers' cleaner thread, bad policy."""

from __future__ import annotations

import os
import threading
import time

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system.log import LogSystemFactory, storage
from samza_dagster.system.log.cleaner import CHUNK
from support.log_reading import read_partition

SYSTEM = "log"
HOUR_MS = 3_600_000


def _config(root, **extra: str) -> Config:
    return Config({f"systems.{SYSTEM}.log.path": str(root), **extra})


def _create(config: Config, stream: str, partitions: int = 1, **properties: str) -> None:
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    admin.create_stream(StreamSpec(stream, stream, SYSTEM, partitions, properties))
    admin.stop()


def _produce(config: Config, stream: str, messages, partition: int = 0) -> None:
    """``messages``: (key, value, timestamp) with str/None key and value."""
    producer = LogSystemFactory().get_producer(SYSTEM, config)
    producer.register("t")
    ss = SystemStream(SYSTEM, stream)
    for key, value, ts in messages:
        producer.send(
            "t",
            OutgoingMessageEnvelope(
                ss,
                None if value is None else value.encode(),
                None if key is None else key.encode(),
                partition=partition,
                event_time=ts,
            ),
        )
    producer.stop()


def _read(
    config: Config, stream: str, partition: int = 0, start: str | None = None
) -> list[tuple[int, str | None, str | None]]:
    if start is None:
        start = _metadata(config, stream, partition).oldest_offset
    return read_partition(config, SYSTEM, stream, partition, start)


def _metadata(config: Config, stream: str, partition: int = 0):
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    try:
        return admin.get_system_stream_metadata([stream])[stream].partitions[partition]
    finally:
        admin.stop()


def _clean(config: Config, stream: str, now_ms: int | None = None):
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    try:
        return admin.clean_stream(stream, now_ms)
    finally:
        admin.stop()


def test_retention_by_time_removes_the_oldest_up_to_the_first_young_message(tmp_path):
    config = _config(tmp_path)
    _create(config, "s", **{"retention.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    old, young = now - 2 * HOUR_MS, now - 60_000
    _produce(config, "s", [("a", "1", old), ("b", "2", old), ("c", "3", young), ("d", "4", old), ("e", "5", young)])
    stats = _clean(config, "s", now)
    assert stats.deleted == 2
    # the old message after a young one stays: retention moves the start, it does not punch holes
    assert _read(config, "s") == [(2, "c", "3"), (3, "d", "4"), (4, "e", "5")]
    pm = _metadata(config, "s")
    assert (pm.oldest_offset, pm.newest_offset, pm.upcoming_offset) == ("2", "4", "5")


def test_retention_by_bytes_keeps_at_most_that_many_bytes_per_partition(tmp_path):
    config = _config(tmp_path)
    _create(config, "s", partitions=2, **{"retention.bytes": "25"})
    now = int(time.time() * 1000)
    for partition in (0, 1):
        _produce(config, "s", [(None, f"{i:010d}", now) for i in range(10)], partition)  # 10 bytes each
    _clean(config, "s", now)
    for partition in (0, 1):
        assert [o for o, _, _ in _read(config, "s", partition)] == [8, 9]


def test_compaction_keeps_the_newest_per_key_and_unkeyed_messages_with_their_offsets(tmp_path):
    config = _config(tmp_path)
    _create(config, "s", **{"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    _produce(
        config,
        "s",
        [
            ("a", "1", now),
            ("b", "1", now),
            (None, "x", now),
            ("a", "2", now),
            ("c", "1", now),
            ("b", "2", now),
            ("a", "3", now),
        ],
    )
    stats = _clean(config, "s", now + 1)
    assert stats.deleted == 3
    assert _read(config, "s") == [(2, None, "x"), (4, "c", "1"), (5, "b", "2"), (6, "a", "3")]
    # idempotent
    assert _clean(config, "s", now + 1).deleted == 0


def test_tombstones_are_dropped_only_after_delete_retention(tmp_path):
    config = _config(tmp_path)
    _create(config, "s", **{"cleanup.policy": "compact", "delete.retention.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    _produce(config, "s", [("a", "1", now), ("b", "1", now), ("a", None, now), ("c", "1", now)])
    _clean(config, "s", now + 1)
    # the tombstone supersedes a's value but is kept while young: a reader still learns of the delete
    assert _read(config, "s") == [(1, "b", "1"), (2, "a", None), (3, "c", "1")]
    _clean(config, "s", now + HOUR_MS + 1)
    assert _read(config, "s") == [(1, "b", "1"), (3, "c", "1")]


def test_min_compaction_lag_protects_recent_messages(tmp_path):
    config = _config(tmp_path)
    _create(config, "s", **{"cleanup.policy": "compact", "min.compaction.lag.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    _produce(config, "s", [("a", "1", now - 2 * HOUR_MS), ("a", "2", now - 2 * HOUR_MS), ("a", "3", now)])
    _clean(config, "s", now)
    # a:2 is superseded only by a young message: it stays until a:3 is older than the lag
    assert [o for o, _, _ in _read(config, "s")] == [1, 2]


def test_compact_and_delete_together(tmp_path):
    config = _config(tmp_path)
    _create(config, "s", **{"cleanup.policy": "compact,delete", "retention.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    _produce(config, "s", [("a", "1", now - 2 * HOUR_MS), ("b", "1", now), ("b", "2", now)])
    _clean(config, "s", now)
    assert _read(config, "s") == [(2, "b", "2")]


def test_an_emptied_partition_never_reuses_offsets(tmp_path):
    config = _config(tmp_path)
    _create(config, "s", **{"retention.ms": "0"})
    now = int(time.time() * 1000)
    _produce(config, "s", [("a", "1", now - 10), ("b", "2", now - 10), ("c", "3", now - 10)])
    assert _clean(config, "s", now).deleted == 3
    pm = _metadata(config, "s")
    assert (pm.oldest_offset, pm.newest_offset, pm.upcoming_offset) == ("3", None, "3")
    _produce(config, "s", [("d", "4", now + 10)])
    assert _read(config, "s") == [(3, "d", "4")]
    # a compacted partition whose last message was an expired tombstone continues the same way
    _create(config, "t", **{"cleanup.policy": "compact", "delete.retention.ms": "0"})
    _produce(config, "t", [("a", "1", now - 10), ("a", None, now - 10)])
    _clean(config, "t", now)
    assert _metadata(config, "t").upcoming_offset == "2"
    _produce(config, "t", [("a", "2", now)])
    assert _read(config, "t") == [(2, "a", "2")]


def test_compaction_removing_the_newest_message_never_moves_the_upcoming_offset_back(tmp_path):
    # a=1, b=2, then b's tombstone at offset 2; the expired tombstone is the partition's newest
    # message but a:1 stays: the next write must still get offset 3, never 1 (a consumer or
    # checkpoint at 3 would skip anything written at 1 and 2)
    config = _config(tmp_path)
    _create(config, "s", **{"cleanup.policy": "compact", "delete.retention.ms": "0"})
    now = int(time.time() * 1000)
    _produce(config, "s", [("a", "1", now - 10), ("b", "2", now - 10), ("b", None, now - 10)])
    _clean(config, "s", now)
    assert _read(config, "s") == [(0, "a", "1")]
    pm = _metadata(config, "s")
    assert (pm.oldest_offset, pm.newest_offset, pm.upcoming_offset) == ("0", "0", "3")
    _produce(config, "s", [("c", "3", now), ("d", "4", now)])
    assert _read(config, "s", start="3") == [(3, "c", "3"), (4, "d", "4")]
    assert _metadata(config, "s").upcoming_offset == "5"


def test_a_pass_gives_disk_back_in_new_files(tmp_path):
    config = _config(tmp_path, **{f"systems.{SYSTEM}.log.synchronous": "OFF"})
    _create(config, "s", **{"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    _produce(config, "s", [(f"k{i % 10}", "v" * 500, now - 10) for i in range(5000)])
    path = storage.stream_file(str(tmp_path), "s")
    before = os.path.getsize(path)
    stats = _clean(config, "s", now)
    assert stats.deleted > 0 and stats.vacuumed_pages > 0
    assert len(_read(config, "s")) == 10
    assert os.path.getsize(path) < before / 5


def test_readers_during_compaction_end_with_the_same_state_and_never_fail(tmp_path):
    """A reader going through a partition while it is compacted in many short transactions
    (and written to) sees, per key, the newest value — the same state as the whole log."""
    config = _config(tmp_path, **{f"systems.{SYSTEM}.log.synchronous": "OFF"})
    _create(config, "s", **{"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    rounds, keys = 8, 2000
    _produce(config, "s", [(f"k{i % keys}", f"{r}", now) for r in range(rounds) for i in range(keys)])
    expected = {f"k{i}": str(rounds - 1) for i in range(keys)}
    assert rounds * keys > 3 * CHUNK  # several deleting transactions per pass
    errors: list[BaseException] = []
    states: list[dict] = []
    done = threading.Event()

    def read_loop() -> None:
        try:
            while not done.is_set():
                state = {}
                for _offset, key, value in _read(config, "s"):
                    state[key] = value
                states.append(state)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    readers = [threading.Thread(target=read_loop) for _ in range(2)]
    for r in readers:
        r.start()
    try:
        deadline = time.monotonic() + 60
        while len(states) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _clean(config, "s", now + 1).deleted == (rounds - 1) * keys
        seen = len(states)
        while len(states) < seen + 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        done.set()
        for r in readers:
            r.join()
    assert not errors
    assert len(states) >= 4 and all(state == expected for state in states)


def test_producers_clean_in_the_background(tmp_path):
    config = _config(tmp_path, **{f"systems.{SYSTEM}.log.cleaner.interval.ms": "0"})
    _create(config, "s", partitions=2, **{"cleanup.policy": "compact"})
    producer = LogSystemFactory().get_producer(SYSTEM, config)
    producer.register("t")
    ss = SystemStream(SYSTEM, "s")
    try:
        for i in range(3000):
            producer.send("t", OutgoingMessageEnvelope(ss, b"v%d" % i, b"k%d" % (i % 5), partition=0))
        producer.flush("t")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pm = _metadata(config, "s")
            # compacted to the newest per key: 5 rows, the last at 2999 (the lag is 0)
            if len(_read(config, "s")) == 5:
                break
            time.sleep(0.02)
        assert [o for o, _, _ in _read(config, "s")] == [2995, 2996, 2997, 2998, 2999]
        assert pm.upcoming_offset == "3000"
        assert _read(config, "s", partition=1) == []  # never written by this producer
    finally:
        producer.stop()


def test_streams_without_a_policy_are_left_alone_and_changelogs_default_to_compact(tmp_path):
    config = _config(tmp_path)
    _create(config, "plain")
    now = int(time.time() * 1000)
    _produce(config, "plain", [("a", "1", 0), ("a", "2", 0)])
    assert _clean(config, "plain", now).deleted == 0
    from samza_dagster.storage.changelog import prepare_changelogs
    from samza_dagster.storage.specs import StoreSpec

    admin = LogSystemFactory().get_admin(SYSTEM, config)
    spec = StoreSpec("st", "inmemory", "string", "string", SystemStream(SYSTEM, "st-changelog"))
    prepare_changelogs([spec], {SYSTEM: admin}, 2)
    conn, _ = storage.open_stream(SYSTEM, str(tmp_path), "st-changelog", "NORMAL", 5)
    props = dict(conn.execute("SELECT name, value FROM meta WHERE name LIKE 'property.%'").fetchall())
    conn.close()
    admin.stop()
    assert props["property.cleanup.policy"] == "compact"


def test_config_sets_the_policy_of_created_streams_with_per_stream_over_default(tmp_path):
    config = _config(
        tmp_path,
        **{
            f"systems.{SYSTEM}.default.stream.retention.ms": "1000",
            f"systems.{SYSTEM}.streams.b.retention.ms": "5000",
            "streams.cid.samza.system": SYSTEM,
            "streams.cid.samza.physical.name": "c",
            "streams.cid.cleanup.policy": "compact",
        },
    )
    for stream in ("a", "b", "c"):
        _create(config, stream)
    props = {}
    for stream in ("a", "b", "c"):
        conn, _ = storage.open_stream(SYSTEM, str(tmp_path), stream, "NORMAL", 5)
        props[stream] = dict(conn.execute("SELECT name, value FROM meta WHERE name LIKE 'property.%'").fetchall())
        conn.close()
    assert props["a"]["property.retention.ms"] == "1000"
    assert props["b"]["property.retention.ms"] == "5000"
    assert props["c"]["property.cleanup.policy"] == "compact"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (f"systems.{SYSTEM}.streams.s.cleanup.policy", "shred"),
        (f"systems.{SYSTEM}.streams.s.retention.ms", "-5"),
        (f"systems.{SYSTEM}.default.stream.retention.bytes", "lots"),
        (f"systems.{SYSTEM}.streams.s.delete.retention.ms", "-1"),
        (f"systems.{SYSTEM}.log.cleaner.interval.ms", "-1"),
    ],
)
def test_bad_cleanup_config_is_an_error_naming_key_and_value(tmp_path, key, value):
    with pytest.raises(ConfigError) as err:
        LogSystemFactory().get_admin(SYSTEM, _config(tmp_path, **{key: value}))
    assert key in str(err.value) and value in str(err.value)
    assert err.value.key == key
    if key.endswith("delete.retention.ms"):
        assert "-1 for no limit" not in str(err.value)  # checked as itself, not as retention.ms


def test_a_bad_requested_policy_is_refused_before_the_file_exists(tmp_path):
    config = _config(tmp_path)
    with pytest.raises(ConfigError, match=r"cleanup.policy.*'forever'"):
        _create(config, "s", **{"cleanup.policy": "forever"})
    assert not os.path.exists(storage.stream_file(str(tmp_path), "s"))


def test_files_of_format_1_are_cleaned_too_and_keep_their_freed_pages(tmp_path):
    import sqlite3

    from samza_dagster.system.log.formats import FORMATS

    root = str(tmp_path)
    conn = sqlite3.connect(storage.stream_file(root, "legacy"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(storage.META_SCHEMA)
    for statement in FORMATS[1].schema:
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO meta (name, value) VALUES (?, ?)",
        [
            ("partition_count", "1"),
            ("property.cleanup.policy", "compact,delete"),
            ("property.retention.ms", "1000"),
        ],
    )
    now = int(time.time() * 1000)
    conn.executemany(
        FORMATS[1].insert_sql,
        [
            (0, 0, b"a", b"1", now - 5000),
            (0, 1, b"b", b"1", now),
            (0, 2, b"a", b"2", now),
            (0, 3, b"b", b"2", now),
        ],
    )
    conn.close()
    config = _config(tmp_path)
    stats = _clean(config, "legacy", now + 1)
    assert stats.deleted == 2 and stats.vacuumed_pages == 0  # auto_vacuum is off in old files
    assert _read(config, "legacy") == [(2, "a", "2"), (3, "b", "2")]
    assert _clean(config, "legacy", now + 10_000).deleted == 2
    assert _metadata(config, "legacy").upcoming_offset == "4"
    _produce(config, "legacy", [("c", "1", now)])
    assert _read(config, "legacy") == [(4, "c", "1")]


def test_the_cli_cleans_a_stream_by_its_stored_policy(tmp_path, capsys):
    from samza_dagster.cli import main

    config = _config(tmp_path)
    args = ["--config", f"systems.{SYSTEM}.log.path={tmp_path}"]
    assert (
        main(
            [
                "streams",
                "create",
                "log.s",
                "--partitions",
                "1",
                *args,
                "--config",
                f"systems.{SYSTEM}.streams.s.cleanup.policy=compact",
            ]
        )
        == 0
    )
    _produce(config, "s", [("a", "1", 0), ("a", "2", 0)])
    capsys.readouterr()
    assert main(["streams", "clean", "log.s", *args]) == 0
    assert "log.s: removed 1 messages" in capsys.readouterr().out
    assert _read(config, "s") == [(1, "a", "2")]
    assert main(["streams", "clean", "log.nowhere", *args]) == 1


def test_only_streams_that_are_cleaned_give_pages_back(tmp_path):
    config = _config(tmp_path)
    _create(config, "kept")
    _create(config, "cleaned", **{"retention.bytes": "1000000"})
    modes = {}
    for stream in ("kept", "cleaned"):
        conn, _ = storage.open_stream(SYSTEM, str(tmp_path), stream, "NORMAL", 5)
        modes[stream] = conn.execute("PRAGMA auto_vacuum").fetchone()[0]
        conn.close()
    assert modes == {"kept": 0, "cleaned": 2}  # NONE, INCREMENTAL


def test_a_producer_of_streams_that_are_never_cleaned_starts_no_cleaner(tmp_path):
    config = _config(tmp_path, **{f"systems.{SYSTEM}.log.cleaner.interval.ms": "0"})
    _create(config, "plain")
    producer = LogSystemFactory().get_producer(SYSTEM, config)
    producer.register("t")
    producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, "plain"), b"v", b"k"))
    producer.flush("t")
    assert not producer.cleaner.started
    producer.stop()


def test_a_corrupt_stored_policy_is_one_warning_line_and_the_stream_is_left_alone(tmp_path, caplog):
    import sqlite3

    config = _config(tmp_path, **{f"systems.{SYSTEM}.log.cleaner.interval.ms": "0"})
    _create(config, "s", **{"cleanup.policy": "compact"})
    with sqlite3.connect(storage.stream_file(str(tmp_path), "s")) as conn:
        conn.execute("UPDATE meta SET value = 'compcat' WHERE name = 'property.cleanup.policy'")
    now = int(time.time() * 1000)
    with caplog.at_level("WARNING", logger="samza_dagster.system.log.cleaner"):
        _produce(config, "s", [("a", "1", now), ("a", "2", now)])
    (record,) = [r for r in caplog.records if r.name == "samza_dagster.system.log.cleaner"]
    assert record.exc_info is None and "\n" not in record.getMessage()
    assert "stream 's' is not cleaned: its stored cleanup policy is bad" in record.getMessage()
    assert "'compcat'" in record.getMessage()
    assert [o for o, _, _ in _read(config, "s")] == [0, 1]


def test_a_cleaning_pass_reads_each_partitions_floor_not_every_floor_per_partition(tmp_path, monkeypatch):
    """Once a stream is cleaned, every partition has a recorded floor; a later pass must read
    about one floor per partition (it once read all P floors for each of P partitions)."""
    partitions = 64
    config = _config(tmp_path)
    _create(config, "s", partitions, **{"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    for p in range(partitions):
        _produce(config, "s", [("k", "1", now), ("k", "2", now)], partition=p)
    assert _clean(config, "s", now + 1).deleted == partitions  # each partition records its floor
    fmt = type(storage.StreamConnection.log_format)
    floors_read = []
    recorded = fmt.recorded_next_offsets

    def counted(self, conn, *asked):
        floors = recorded(self, conn, *asked)
        floors_read.append(len(floors))
        return floors

    monkeypatch.setattr(fmt, "recorded_next_offsets", counted)
    for p in range(partitions):
        _produce(config, "s", [("k", "3", now)], partition=p)
    assert _clean(config, "s", now + 1).deleted == partitions
    assert sum(floors_read) <= 4 * partitions, f"{sum(floors_read)} floors read in {len(floors_read)} lookups"
    assert [_read(config, "s", p) for p in (0, partitions - 1)] == [[(2, "k", "3")]] * 2


# -- a pass over many partitions with rows in format 3's head ------------------------------------
WIDE = 64


def _wide_head(tmp_path, monkeypatch, **properties: str) -> Config:
    """A stream of WIDE partitions whose rows all stay in format 3's head: every key twice (the
    first of each superseded), written in wide batches (too few rows per partition to be a run of
    their own) with no seal."""
    from samza_dagster.system.log.runs_format import RunsFormat

    monkeypatch.setattr(RunsFormat, "seal_rows", 10**9)  # (whatever the conftest's variant set)
    monkeypatch.setattr(RunsFormat, "direct_rows_per_partition", 10**9)
    config = _config(tmp_path, **{f"systems.{SYSTEM}.log.cleaner.interval.ms": str(10**12)})
    _create(config, "w", partitions=WIDE, **properties)
    producer = LogSystemFactory().get_producer(SYSTEM, config)
    producer.register("t")
    ss = SystemStream(SYSTEM, "w")
    now = int(time.time() * 1000)
    for round_ in range(2):
        for i in range(WIDE * 3):
            producer.send(
                "t", OutgoingMessageEnvelope(ss, b"%d" % round_, b"k%d" % i, partition=i % WIDE, event_time=now)
            )
    producer.stop()
    conn, _ = storage.open_stream(SYSTEM, str(tmp_path), "w", "NORMAL", 30.0)
    try:
        assert conn.execute("SELECT COUNT(*) FROM head").fetchone()[0] == 2 * WIDE * 3
    finally:
        conn.close()
    return config


def test_a_pass_reads_the_head_once_for_all_its_partitions_and_deletes_head_rows_by_seq(tmp_path, monkeypatch):
    config = _wide_head(tmp_path, monkeypatch, **{"cleanup.policy": "compact"})
    statements: list[str] = []
    connect = storage.connect

    def tracing(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(storage, "connect", tracing)
    stats = _clean(config, "w")
    assert stats.deleted == WIDE * 3  # every first write of a key
    per_partition = [s for s in statements if 'FROM head WHERE "partition"' in s]
    whole = [s for s in statements if "FROM head ORDER BY seq" in s]
    assert not per_partition and len(whole) == 1  # the head read once per pass, not once per partition
    deletes = [s for s in statements if s.startswith("DELETE FROM head")]
    assert len(deletes) == WIDE and all("WHERE seq IN" in s for s in deletes)
    for partition in range(WIDE):
        assert {(k, v) for _, k, v in _read(config, "w", partition)} == {
            (f"k{i}", "1") for i in range(partition, WIDE * 3, WIDE)
        }


def test_a_seal_between_deciding_and_deleting_still_removes_exactly_the_superseded(tmp_path, monkeypatch):
    """The pass decides from one snapshot, then deletes: a seal in between moves the head's rows
    into runs, the seqs it noted no longer hold, and the rows are found in their spans."""
    from samza_dagster.system.log import cleaner

    config = _wide_head(tmp_path, monkeypatch, **{"cleanup.policy": "compact"})
    in_transaction = cleaner._in_transaction
    sealed = []

    def seal_first(conn, fmt, partition, delete):
        if not sealed:
            with storage.write_transaction(conn):
                fmt.seal(conn)
            sealed.append(conn.execute("SELECT COUNT(*) FROM head").fetchone()[0])
        return in_transaction(conn, fmt, partition, delete)

    monkeypatch.setattr(cleaner, "_in_transaction", seal_first)
    assert _clean(config, "w").deleted == WIDE * 3
    assert sealed == [0]
    for partition in range(WIDE):
        assert {(k, v) for _, k, v in _read(config, "w", partition)} == {
            (f"k{i}", "1") for i in range(partition, WIDE * 3, WIDE)
        }


def test_retention_over_the_head_of_many_partitions(tmp_path, monkeypatch):
    config = _wide_head(tmp_path, monkeypatch, **{"retention.ms": str(HOUR_MS)})
    later = int(time.time() * 1000) + 2 * HOUR_MS  # every message has expired by then
    assert _clean(config, "w", later).deleted == 2 * WIDE * 3
    for partition in range(WIDE):
        assert _read(config, "w", partition) == []
        assert _metadata(config, "w", partition).upcoming_offset == "6"  # offsets go on where they were
