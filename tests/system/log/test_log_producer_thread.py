"""The log producer's thread writes lingering batches, ``send`` full ones (waiting for the stream
file's write lock, so a producer buffers at most a batch per stream); ``flush`` only returns once
the thread's write in flight is committed. Real SQLite files; another connection holding a stream file's write lock stands in for another container
writing the same stream."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from samza_dagster.system import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.errors import SystemWriteError
from samza_dagster.system.log import storage
from samza_dagster.system.log.producer import FILLING_WAIT_S, due_in
from support.waiting import wait_until
from tests.system.log.test_log_system import SYSTEM, Harness, drain, ssps_of

BATCH = 20


@pytest.fixture
def log(tmp_path) -> Harness:
    return Harness("log", str(tmp_path / "log"))


@contextmanager
def write_locked(harness: Harness, stream: str) -> Iterator[sqlite3.Connection]:
    """The stream file's write lock, held by a connection of this test (as another process's
    producer holds it during its transaction) until the block ends."""
    conn = sqlite3.connect(storage.stream_file(harness.config.get_str(f"systems.{SYSTEM}.log.path"), stream))
    conn.isolation_level = None
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def upcoming(harness: Harness, stream: str) -> int:
    metadata = harness.admin().get_system_stream_metadata([stream])[stream]
    return sum(int(p.upcoming_offset) for p in metadata.partitions.values())


def producer_of(harness: Harness, **overrides: str):
    keys = {f"systems.{SYSTEM}.log.batch.size": str(BATCH), f"systems.{SYSTEM}.log.busy.timeout.ms": "60000"}
    keys.update({f"systems.{SYSTEM}.log.{k.replace('_', '.')}": v for k, v in overrides.items()})
    return harness.producer(harness.configured(**keys))


def send(producer, stream: str, values: range) -> None:
    for i in values:
        producer.send("test", OutgoingMessageEnvelope(SystemStream(SYSTEM, stream), b"%d" % i, partition=0))


def test_send_writes_a_full_batch_itself_once_another_writers_lock_is_free(log):
    """Another writer holds the file's lock: the ``send`` that fills a batch waits for it (memory
    stays bounded by a batch per stream) and writes the batch itself, in order, once it is free."""
    log.create("out", 1)
    producer = producer_of(log)
    sent: list[int] = []

    def sender() -> None:
        for i in range(3 * BATCH):
            send(producer, "out", range(i, i + 1))
            sent.append(i)

    try:
        with write_locked(log, "out"):
            thread = threading.Thread(target=sender)
            thread.start()
            wait_until(lambda: len(sent) == BATCH - 1, 30, "send to buffer a batch less one")
            thread.join(0.5)
            assert thread.is_alive(), "send never waited with the file locked"
            assert len(sent) == BATCH - 1 and upcoming(log, "out") == 0  # the BATCH-th send waits
        thread.join(60)
        assert not thread.is_alive()
        assert upcoming(log, "out") == 3 * BATCH  # every full batch, before any flush
        written = producer.metrics_snapshot()["transactions"]
        assert written["batch"] == 3 and written["flush"] == 0, written
    finally:
        producer.stop()
    [envelopes] = drain(log.start_consumer({ssp: "0" for ssp in ssps_of("out", 1)}), ssps_of("out", 1)).values()
    assert [e.message for e in envelopes] == [b"%d" % i for i in range(3 * BATCH)]
    assert [e.offset for e in envelopes] == [str(i) for i in range(3 * BATCH)]


def test_flush_returns_only_after_the_threads_write_in_flight_is_committed(log):
    """A commit flushes and then writes its checkpoint: if ``flush`` returned while the thread
    still held a batch it had taken from the buffer, the checkpoint would cover messages that are
    not written."""
    log.create("out", 1)
    producer = producer_of(log)
    try:
        with write_locked(log, "out"):
            send(producer, "out", range(3))
            buffer = producer._writers["out"].buffer
            wait_until(lambda: not buffer, 30, "the thread to take the lingering batch")  # it waits for the lock
            flushed = threading.Event()
            flusher = threading.Thread(target=lambda: (producer.flush("test"), flushed.set()))
            flusher.start()
            assert not flushed.wait(0.5), "flush returned with the thread's batch unwritten"
        flusher.join(30)
        assert flushed.is_set()
        assert upcoming(log, "out") == 3  # everything, the moment flush returned
    finally:
        producer.stop()


def test_a_failed_write_on_the_thread_keeps_the_messages_for_the_next_flush(log, caplog):
    log.create("out", 1)
    producer = producer_of(log, busy_timeout_ms="300")
    try:
        with write_locked(log, "out"):
            send(producer, "out", range(3))  # lingering: the thread's write
            wait_until(lambda: "kept for the next flush" in caplog.text, 30, "the thread to give up")
            with pytest.raises(SystemWriteError, match=r"writing \d+ messages to stream 'out'.*locked"):
                producer.flush("test")  # the lock is still held: the flush fails too, keeping them
        producer.flush("test")
        assert upcoming(log, "out") == 3
    finally:
        producer.stop()


def test_linger_zero_leaves_writing_to_send_and_flush(log):
    """``log.linger.ms=0``: no thread; ``send`` writes the full batch itself."""
    log.create("out", 1)
    producer = producer_of(log, linger_ms="0")
    try:
        send(producer, "out", range(BATCH))
        assert upcoming(log, "out") == BATCH  # written by the BATCH-th send, on this thread
        send(producer, "out", range(BATCH, BATCH + 3))
        producer.flush("test")
        assert producer.metrics_snapshot()["transactions"] == {"batch": 1, "full": 0, "linger": 0, "flush": 1}
        assert producer.metrics_snapshot()["rows"] == {"batch": BATCH, "full": 0, "linger": 0, "flush": 3}
    finally:
        producer.stop()


def test_lingering_messages_are_counted_as_the_threads_linger_writes(log):
    log.create("out", 1)
    producer = producer_of(log)
    try:
        send(producer, "out", range(3))
        wait_until(lambda: upcoming(log, "out") == 3, 30, "the linger write")
        stats = producer.metrics_snapshot()
        assert stats["rows"]["linger"] == 3 and stats["transactions"]["linger"] == 1, stats
        assert stats["commit_s"] > 0
    finally:
        producer.stop()


# -- the write lock --------------------------------------------------------------------------------
def test_begin_immediate_waits_for_the_lock_and_gets_it_once_free(tmp_path):
    path = str(tmp_path / "x.db")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(path, isolation_level=None, timeout=60)
    release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    release.start()
    storage.begin_immediate(waiter, 60.0)
    waiter.execute("INSERT INTO t VALUES (1)")
    waiter.execute("COMMIT")
    release.join()
    assert waiter.execute("PRAGMA busy_timeout").fetchone() == (60000,)  # its own timeout, as before


def test_begin_immediate_gives_up_after_the_busy_timeout_and_keeps_the_connections_timeout(tmp_path):
    path = str(tmp_path / "x.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(path, isolation_level=None, timeout=0.2)  # as the log opens its connections
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        storage.begin_immediate(waiter, 0.2)
    assert not waiter.in_transaction
    assert waiter.execute("PRAGMA busy_timeout").fetchone() == (200,)
    holder.execute("ROLLBACK")


# -- when the thread writes a stream (due_in) -------------------------------------------------------
@pytest.mark.parametrize(
    ("buffered", "waited_ms", "due_ms"),
    [
        (1000, 0, 0),  # a full batch: now
        (3, 1, 4),  # before the linger: at the linger
        (5, 5, 0),  # 1,000 msgs/s (B12): written at the linger
        (300, 5, 5),  # 60,000 msgs/s: fills the batch in 17 ms — looked at again after a linger
        (300, 10, 5),  # 30,000 msgs/s so far: held another linger
        (300, 20, 0),  # ... but nothing more came (a burst that stopped): written
        (700, 35, 5),  # 20,000 msgs/s: fills it in 50 ms — held
        (960, 48, 2),  # 20,000 msgs/s: held until FILLING_WAIT_S at most
        (999, 50, 0),  # FILLING_WAIT_S: written, full or not
        (90, 5, 0),  # 18,000 msgs/s: the batch would take longer than 50 ms: written at the linger
    ],
)
def test_a_stream_filling_towards_a_batch_waits_for_it_at_most_50_ms(buffered, waited_ms, due_ms):
    assert FILLING_WAIT_S == 0.05
    assert due_in(buffered, waited_ms / 1000, 1000, 0.005) == pytest.approx(due_ms / 1000, abs=1e-9)


def test_a_stream_sending_fast_is_written_in_full_batches_not_at_every_linger(log):
    """A full batch every 8–40 ms (sooner than FILLING_WAIT_S, later than the linger): written by
    ``send`` as batches fill, where the thread used to write a part of one every 5 ms."""
    log.create("out", 1)
    producer = producer_of(log, batch_size="200")
    try:
        for burst in range(40):  # 50 rows every 2 ms (10 ms on a loaded machine): 200 rows per 8–40 ms
            send(producer, "out", range(burst * 50, burst * 50 + 50))
            threading.Event().wait(0.002)
        producer.flush("test")
        stats = producer.metrics_snapshot()
    finally:
        producer.stop()
    assert upcoming(log, "out") == 2000
    assert stats["transactions"]["linger"] <= 1, stats  # at most the first look, before the rate showed
    assert stats["transactions"]["batch"] >= 3, stats
