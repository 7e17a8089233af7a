"""The log's table layouts: new stream files use format 3 (an arrival-ordered head sealed into
per-partition runs, runs_format.py), which keeps a 1 KiB message in about 1 KiB of disk; files of
the earlier layouts (format 1, WITHOUT ROWID; format 2, rowid = partition << 40 | offset) are still
read and appended to; a file of an unknown format is refused by name."""

from __future__ import annotations

import os
import sqlite3

import pytest

from samza_dagster.config import Config
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.log import LogSystemFactory, storage
from samza_dagster.system.log.formats import FORMATS


@pytest.fixture
def log(tmp_path):
    root = tmp_path / "log"
    config = Config({"systems.log.samza.factory": "log", "systems.log.log.path": str(root)})
    return LogSystemFactory(), config, str(root)


def _produce(factory, config, stream: str, partitions: int, count: int, value: bytes) -> None:
    producer = factory.get_producer("log", config)
    producer.register("t")
    producer.start()
    for i in range(count):
        producer.send(
            "t", OutgoingMessageEnvelope(SystemStream("log", stream), value + b"%d" % i, partition=i % partitions)
        )
    producer.stop()


def _read_all(factory, config, stream: str, partitions: int) -> dict[int, list[tuple[str, bytes]]]:
    consumer = factory.get_consumer("log", config)
    ssps = [SystemStreamPartition("log", stream, p) for p in range(partitions)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    out: dict[int, list[tuple[str, bytes]]] = {p: [] for p in range(partitions)}
    while polled := consumer.poll(ssps, 0):
        for ssp, envelopes in polled.items():
            out[ssp.partition] += [(e.offset, e.message) for e in envelopes]
    consumer.stop()
    return out


def _disk_bytes(root: str, stream: str) -> int:
    path = storage.stream_file(root, stream)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(os.path.getsize(path + suffix) for suffix in ("", "-wal") if os.path.exists(path + suffix))


def test_a_new_stream_is_format_3_and_a_1_kib_message_takes_about_1_kib_of_disk(log):
    factory, config, root = log
    factory.get_admin("log", config).create_stream(StreamSpec("big", "big", "log", 3))
    _produce(factory, config, "big", 3, 3000, b"v" * 1024)
    conn, _ = storage.open_stream("log", root, "big", "NORMAL", 5.0)
    assert conn.log_format.version == 3
    conn.close()
    # format 1 stored each of these in ~4.6 KB (an overflow page per message)
    assert _disk_bytes(root, "big") < 3000 * 1400
    read = _read_all(factory, config, "big", 3)
    assert [offset for offset, _ in read[1]] == [str(i) for i in range(1000)]
    assert read[2][5][1] == b"v" * 1024 + b"17"  # the 18th message went to partition 2, offset 5


def _old_format_stream(root: str, stream: str, partitions: int, version: int) -> None:
    os.makedirs(root, exist_ok=True)
    conn = sqlite3.connect(storage.stream_file(root, stream), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(storage.META_SCHEMA)
    for statement in FORMATS[version].schema:
        conn.execute(statement)
    conn.execute("INSERT INTO meta (name, value) VALUES ('partition_count', ?)", (str(partitions),))
    if version > 1:  # a format-1 file has no format row
        conn.execute("INSERT INTO meta (name, value) VALUES ('format', ?)", (str(version),))
    FORMATS[version].insert(conn, [(p, o, None, b"old-%d-%d" % (p, o), 0) for p in range(partitions) for o in range(3)])
    conn.close()


@pytest.mark.parametrize("version", [1, 2])
def test_a_stream_of_an_earlier_format_is_still_read_appended_to_and_measured(log, version):
    factory, config, root = log
    _old_format_stream(root, "legacy", 2, version)
    _produce(factory, config, "legacy", 2, 4, b"new-")
    read = _read_all(factory, config, "legacy", 2)
    assert read[0] == [("0", b"old-0-0"), ("1", b"old-0-1"), ("2", b"old-0-2"), ("3", b"new-0"), ("4", b"new-2")]
    metadata = factory.get_admin("log", config).get_system_stream_metadata(["legacy"])["legacy"]
    assert metadata.partitions[1].newest_offset == "4" and metadata.partitions[1].upcoming_offset == "5"
    conn, _ = storage.open_stream("log", root, "legacy", "NORMAL", 5.0)
    assert conn.log_format.version == version
    conn.close()


def test_the_admin_reports_oldest_and_newest_per_partition(log):
    factory, config, root = log
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec("m", "m", "log", 3))
    _produce(factory, config, "m", 2, 5, b"x")  # partitions 0 and 1 only
    partitions = admin.get_system_stream_metadata(["m"])["m"].partitions
    assert (partitions[0].oldest_offset, partitions[0].newest_offset, partitions[0].upcoming_offset) == ("0", "2", "3")
    assert (partitions[1].newest_offset, partitions[1].upcoming_offset) == ("1", "2")
    assert (partitions[2].newest_offset, partitions[2].upcoming_offset) == (None, "0")


def test_a_stream_file_of_an_unknown_format_is_refused_by_name(log):
    factory, config, root = log
    factory.get_admin("log", config).create_stream(StreamSpec("future", "future", "log", 1))
    with sqlite3.connect(storage.stream_file(root, "future"), isolation_level=None) as conn:
        conn.execute("UPDATE meta SET value = '9' WHERE name = 'format'")
    with pytest.raises(StreamNotFoundError, match=r"'future'.*log format 9, which this version cannot read"):
        storage.open_stream("log", root, "future", "NORMAL", 5.0)


@pytest.mark.parametrize("count", [1, 2, 3, 127, 128, 1000, 2048, 2049, 5000])
def test_a_batch_is_inserted_whole_whatever_its_size_against_the_rows_per_statement(log, count):
    """A batch is inserted in statements of power-of-two sizes up to MAX_ROWS_PER_INSERT:
    every row lands at its offset, in its partition, once."""
    factory, config, _ = log
    factory.get_admin("log", config).create_stream(StreamSpec("sized", "sized", "log", 3))
    producer = factory.get_producer("log", config.with_overrides({"systems.log.log.batch.size": str(count)}))
    producer.register("t")
    producer.start()
    for i in range(count):  # one transaction of ``count`` rows, at the batch size
        producer.send("t", OutgoingMessageEnvelope(SystemStream("log", "sized"), b"v%d" % i, partition=i % 3))
    producer.stop()
    got = _read_all(factory, config, "sized", 3)
    for p in range(3):
        mine = [i for i in range(count) if i % 3 == p]
        assert got[p] == [(str(n), b"v%d" % i) for n, i in enumerate(mine)]


def _table_rows(root: str, stream: str) -> dict[str, int]:
    with sqlite3.connect(storage.stream_file(root, stream)) as conn:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("head", "messages", "spans")}


def test_format_3_writes_wide_batches_to_the_head_narrow_ones_as_runs_and_seals_the_head(log, monkeypatch):
    from samza_dagster.system.log.runs_format import RunsFormat

    monkeypatch.setattr(RunsFormat, "seal_rows", 200)
    monkeypatch.setattr(RunsFormat, "direct_rows_per_partition", 16)
    factory, config, root = log
    factory.get_admin("log", config).create_stream(StreamSpec("w", "w", "log", 50))
    _produce(factory, config, "w", 1, 64, b"narrow-")  # one batch, 64 rows of partition 0: a run
    assert _table_rows(root, "w") == {"head": 0, "messages": 64, "spans": 1}
    _produce(factory, config, "w", 50, 150, b"wide-")  # 3 rows per partition: the head
    assert _table_rows(root, "w") == {"head": 150, "messages": 64, "spans": 1}
    _produce(factory, config, "w", 1, 64, b"late-")  # narrow, but the head has rows: the head
    # 150 + 64 = 214 head rows reach seal_rows inside that batch: all sealed into one run
    assert _table_rows(root, "w") == {"head": 0, "messages": 278, "spans": 51}
    _produce(factory, config, "w", 50, 50, b"more-")
    rows = _table_rows(root, "w")
    assert rows["head"] == 50 and rows["messages"] == 278 and rows["spans"] == 51
    read = _read_all(factory, config, "w", 50)
    assert [v for _, v in read[0]] == (
        [b"narrow-%d" % i for i in range(64)]
        + [b"wide-%d" % i for i in (0, 50, 100)]
        + [b"late-%d" % i for i in range(64)]
        + [b"more-0"]
    )
    assert [o for o, _ in read[0]] == [str(i) for i in range(132)]
    assert read[49] == [("0", b"wide-49"), ("1", b"wide-99"), ("2", b"wide-149"), ("3", b"more-49")]


@pytest.mark.parametrize("partitions", [3, 80])  # the head scan filters in SQL, or in Python past 64
def test_a_consumer_at_the_tail_reads_every_row_once_while_the_head_is_written_and_sealed(log, partitions):
    """Rounds of wide batches, each followed by polls with a small fetch: a consumer keeps its
    place in the head between polls, and across seals that move what it has not read yet."""
    factory, config, _ = log
    factory.get_admin("log", config).create_stream(StreamSpec("tail", "tail", "log", partitions))
    consumer = factory.get_consumer("log", config)
    ssps = [SystemStreamPartition("log", "tail", p) for p in range(partitions)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    consumer.limit_fetch(2)
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    sent = 0
    try:
        for _round in range(6):
            _produce(factory, config, "tail", partitions, 5 * partitions, b"r%d-" % _round)
            sent += 5 * partitions
            for _poll in range(2):  # part of what is there: the rest stays behind for later rounds
                for ssp, envelopes in consumer.poll(ssps, 0).items():
                    got[ssp.partition] += [e.message for e in envelopes]
        while polled := consumer.poll(ssps, 0):
            for ssp, envelopes in polled.items():
                got[ssp.partition] += [e.message for e in envelopes]
    finally:
        consumer.stop()
    assert sum(len(v) for v in got.values()) == sent
    for p in range(partitions):
        assert got[p] == [b"r%d-%d" % (r, i) for r in range(6) for i in range(p, 5 * partitions, partitions)]
