"""A producer leaves format 3's head seals to its sealer thread (sealer.py) and goes on buffering
while a seal holds the stream file's write lock: real SQLite files, the seal itself as shipped."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from samza_dagster.system import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.log import storage
from samza_dagster.system.log.producer import HOLD_BATCHES_WHILE_SEALING
from samza_dagster.system.log.runs_format import RunsFormat
from support.waiting import wait_until
from tests.system.log.test_log_producer_thread import BATCH, producer_of, upcoming
from tests.system.log.test_log_system import SYSTEM, Harness, drain, ssps_of

PARTITIONS = 10
SEAL_ROWS = 5 * BATCH


@pytest.fixture
def log(tmp_path, monkeypatch) -> Harness:
    # every batch spreads BATCH rows over PARTITIONS: too wide to skip the head
    monkeypatch.setattr(RunsFormat, "seal_rows", SEAL_ROWS)
    monkeypatch.setattr(RunsFormat, "direct_rows_per_partition", 16)
    harness = Harness("log", str(tmp_path / "log"))
    harness.create("out", PARTITIONS)
    return harness


def send(producer, values: range) -> None:
    for i in values:
        producer.send("test", OutgoingMessageEnvelope(SystemStream(SYSTEM, "out"), b"%d" % i, partition=i % PARTITIONS))


def head_rows(harness: Harness) -> int:
    conn, _ = storage.open_stream(SYSTEM, harness.config.get_str(f"systems.{SYSTEM}.log.path"), "out", "FULL", 30.0)
    try:
        return conn.execute("SELECT COUNT(*) FROM head").fetchone()[0]
    finally:
        conn.close()


def assert_reads_back(harness: Harness, count: int) -> None:
    """Every partition holds its rows in the order sent, at dense offsets from 0."""
    read = drain(harness.start_consumer(dict.fromkeys(ssps_of("out", PARTITIONS), "0")), ssps_of("out", PARTITIONS))
    for ssp in ssps_of("out", PARTITIONS):
        expected = [b"%d" % i for i in range(ssp.partition, count, PARTITIONS)]
        assert [e.message for e in read[ssp]] == expected, ssp
        assert [e.offset for e in read[ssp]] == [str(o) for o in range(len(expected))], ssp


def test_the_batch_that_fills_the_head_leaves_its_seal_to_the_sealer_thread(log, monkeypatch):
    sealed_on: list[str] = []
    seal = RunsFormat.seal

    def recording_seal(self: RunsFormat, conn) -> None:
        sealed_on.append(threading.current_thread().name)
        seal(self, conn)

    monkeypatch.setattr(RunsFormat, "seal", recording_seal)
    producer = producer_of(log, linger_ms="0")
    try:
        send(producer, range(SEAL_ROWS + 2 * BATCH))
        wait_until(lambda: sealed_on, 30, "the sealer to seal the head")
    finally:
        producer.stop()
    assert sealed_on == [f"log-sealer-{SYSTEM}"]  # never the sending thread, inside its batch
    assert producer.metrics_snapshot()["head_seals"] == 1
    assert head_rows(log) < SEAL_ROWS  # what came after the seal waits for the next one
    assert_reads_back(log, SEAL_ROWS + 2 * BATCH)


def test_send_goes_on_buffering_while_a_seal_holds_the_lock_up_to_its_limit(log, monkeypatch):
    """The seal is held inside its write transaction: without the hold, the next full batch's
    ``send`` would wait for the lock behind it; with it, ``send`` buffers up to
    ``HOLD_BATCHES_WHILE_SEALING`` batches, then waits (memory stays bounded), and what gathered is
    written after the seal, in order."""
    release = threading.Event()
    seal_if_due = RunsFormat.seal_if_due

    def held_seal(self: RunsFormat, conn) -> bool:
        assert release.wait(60), "the test never released the seal"
        return seal_if_due(self, conn)

    monkeypatch.setattr(RunsFormat, "seal_if_due", held_seal)
    producer = producer_of(log, linger_ms="0")
    limit = HOLD_BATCHES_WHILE_SEALING * BATCH
    total = SEAL_ROWS + limit + BATCH
    sent: list[int] = []

    def sender() -> None:
        for i in range(SEAL_ROWS, total):
            send(producer, range(i, i + 1))
            sent.append(i)

    try:
        send(producer, range(SEAL_ROWS))  # the last batch fills the head: a seal is asked for
        wait_until(lambda: producer._sealer.sealing == "out", 30, "the sealer to start the seal")
        thread = threading.Thread(target=sender)
        thread.start()
        wait_until(lambda: len(sent) == limit - 1, 30, "send to buffer up to the hold limit")
        thread.join(0.5)
        assert thread.is_alive(), "send went past the hold limit without waiting"
        assert upcoming(log, "out") == SEAL_ROWS  # everything since the seal is still buffered
        release.set()
        thread.join(60)
        assert not thread.is_alive()
        producer.flush("test")
        assert upcoming(log, "out") == total
        written = producer.metrics_snapshot()["transactions"]
        # 5 batches to the seal; the held rows in one, not 32; the last BATCH rows in one
        assert written["batch"] == SEAL_ROWS // BATCH + 2 and written["flush"] == 0, written
    finally:
        release.set()
        producer.stop()
    assert_reads_back(log, total)


def test_a_head_the_sealer_left_at_its_backlog_is_sealed_by_the_writer_that_finds_it(log, monkeypatch):
    """A sealer that never seals (fallen behind, or failing): the head stops growing at
    ``seal_backlog`` × ``seal_rows``, sealed inside the batch that takes it there."""
    monkeypatch.setattr("samza_dagster.system.log.sealer.HeadSealer.request", lambda self, stream: None)
    producer = producer_of(log, linger_ms="0")
    limit = RunsFormat.seal_backlog * SEAL_ROWS
    try:
        send(producer, range(limit - BATCH))
        producer.flush("test")
        assert head_rows(log) == limit - BATCH  # due since SEAL_ROWS, left to the (silent) sealer
        send(producer, range(limit - BATCH, limit + BATCH))
        producer.flush("test")
        assert head_rows(log) == BATCH  # the batch reaching the backlog sealed it, the next is new
    finally:
        producer.stop()
    assert_reads_back(log, limit + BATCH)


def test_a_failed_seal_is_logged_with_its_stream_and_loses_nothing(log, monkeypatch, caplog):
    def failing_seal(self: RunsFormat, conn) -> bool:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(RunsFormat, "seal_if_due", failing_seal)
    producer = producer_of(log, linger_ms="0")
    try:
        send(producer, range(SEAL_ROWS + BATCH))
        wait_until(lambda: "sealing the head of stream 'out' failed" in caplog.text, 30, "the failure's warning")
    finally:
        producer.stop()
    assert "disk I/O error" in caplog.text and producer.metrics_snapshot()["head_seals"] == 0
    assert head_rows(log) == SEAL_ROWS + BATCH  # still in the head, readable
    assert_reads_back(log, SEAL_ROWS + BATCH)
