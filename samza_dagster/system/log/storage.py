"""The on-disk layout of the log system: one SQLite database file per stream.

``<root>/<stream>.db`` (the stream name percent-encoded where it is not file-name safe) holds

* the messages ``("partition", "offset", key, value, timestamp)``, stored so that a read of one
  partition is a b-tree seek then a sequential scan (the table layouts, formats 1 to 3, are in
  formats.py);
* ``meta(name, value)``: ``partition_count``, ``format``, the stream's properties
  (``property.<k>``, among them its cleanup policy: retention.py) and where an emptied partition
  continues (``next_offset.<partition>``, formats.py).

Files of streams whose policy removes messages are created with ``auto_vacuum=INCREMENTAL``, so
pages freed by retention and compaction (cleaner.py) are given back to the file system; other
files (and files created before) reuse freed pages for new messages.

Files are in WAL mode: readers never block writers and see only committed transactions, so a
producer's batch (one transaction) is visible all at once or not at all, in every process.

Durability (``systems.<s>.log.synchronous``, applied per connection):

* ``FULL`` (default) — the WAL is fsynced at every commit, so once a producer's ``flush``
  returns its batch survives power loss. The default because the container's commit protocol
  (flush the producers, *then* write the checkpoint, which lives in another stream file) only
  gives at-least-once across a power loss if each flushed batch is durable before the
  checkpoint is: under NORMAL the checkpoint file's WAL may reach the disk (at its own WAL
  checkpoint) while the output file's last commits do not. Measured on this machine the fsync
  costs ~10% of produce throughput at the default batch of 1000 (docs/benchmarks.md), more for
  small batches — and small batches only happen when traffic is low.
* ``NORMAL`` — in WAL mode the database can never be corrupted and a commit survives the crash
  or kill of any process; the last commits may roll back on power loss or an OS crash, because
  the WAL is fsynced at WAL checkpoints rather than at every commit (the durability of a single
  Kafka broker with its default flush settings). For throughput when that is acceptable.
* ``OFF`` — no fsync at all; for throwaway data.

Whatever the setting, a reader never sees part of a transaction, so never part of a batch.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote, unquote

from samza_dagster.system.errors import InvalidStreamError, StreamExistsError, StreamNotFoundError
from samza_dagster.system.log.formats import CURRENT, FORMATS, LogFormat

SUFFIX = ".db"

#: The meta table; the messages table comes from the file's format (formats.py).
META_SCHEMA = "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"


class StreamConnection(sqlite3.Connection):
    """A connection to one stream file, knowing its table layout (``log_format``)."""

    log_format: LogFormat = CURRENT


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` (the file's write lock first, so writers in any process serialize) …
    ``COMMIT``, rolled back when the block raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


#: the first and the longest pause between two tries for a stream file's write lock (begin_immediate)
LOCK_RETRY_FIRST_S = 0.0001
LOCK_RETRY_MAX_S = 0.0005


def begin_immediate(conn: sqlite3.Connection, busy_timeout_s: float) -> None:
    """``BEGIN IMMEDIATE``, retrying for the file's write lock every 0.1–0.5 ms until
    ``busy_timeout_s`` has passed (then SQLite's "database is locked" error is raised).

    SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25, … up to 100 ms between tries, so a
    writer that finds the lock taken a few times in a row sleeps through tens of ms in which the
    lock is mostly free: producers of several containers appending to one stream file, each holding
    the lock for a transaction's fsync (a few ms), spent seconds per job that way (B6 in
    docs/benchmarks.md). The connection's busy timeout is 0 for the tries and ``busy_timeout_s`` —
    what the log opens its connections with (``connect``) — again after, so every other statement
    on it waits as before."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        pause = LOCK_RETRY_FIRST_S
        deadline: float | None = None
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:  # an extended code's low byte
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline = now + busy_timeout_s
                elif now >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, LOCK_RETRY_MAX_S)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {round(busy_timeout_s * 1000)}")


def stream_file(root: str, stream: str) -> str:
    """The file of ``stream`` under ``root``."""
    if not stream or stream in (".", ".."):
        raise InvalidStreamError(f"{stream!r} is not a valid stream name")
    return os.path.join(root, quote(stream, safe="") + SUFFIX)


def list_stream_names(root: str) -> list[str]:
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    return sorted(unquote(n[: -len(SUFFIX)]) for n in names if n.endswith(SUFFIX) and not n.startswith("."))


def connect(path: str, synchronous: str, busy_timeout_s: float) -> StreamConnection:
    """A connection in autocommit mode (transactions are explicit), usable from any thread
    (a consumer may be polled from another thread than the one that opened it), waiting up to the
    busy timeout for locks."""
    conn = sqlite3.connect(
        path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False, factory=StreamConnection
    )
    conn.execute(f"PRAGMA synchronous={synchronous}")
    return conn


def open_stream(
    system: str, root: str, stream: str, synchronous: str, busy_timeout_s: float
) -> tuple[StreamConnection, int]:
    """A connection to an existing stream's file (its ``log_format`` read from the file) and its
    partition count."""
    path = stream_file(root, stream)
    if not os.path.exists(path):
        raise StreamNotFoundError(
            system, stream, f"no file {path}; create it: samza-dagster streams create {system}.{stream} --partitions N"
        )
    conn = connect(path, synchronous, busy_timeout_s)
    try:
        row = conn.execute("SELECT value FROM meta WHERE name = 'partition_count'").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StreamNotFoundError(system, stream, f"{path} is not a log stream file ({exc})") from exc
    if row is None:
        conn.close()
        raise StreamNotFoundError(system, stream, f"{path} has no partition count")
    version = conn.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
    log_format = FORMATS.get(1 if version is None else int(version[0]))
    if log_format is None:
        conn.close()
        raise StreamNotFoundError(
            system,
            stream,
            f"{path} has log format {version[0]}, which this version cannot read (it knows {sorted(FORMATS)})",
        )
    conn.log_format = log_format
    return conn, int(row[0])


def create_stream_file(
    system: str,
    root: str,
    stream: str,
    partition_count: int,
    properties: dict[str, str] | None,
    reclaim: bool = False,
) -> bool:
    """Create the stream's file with ``partition_count`` partitions; False if it exists with
    that count. Safe against other processes creating it at once: the file is built under a
    temporary name and hard-linked into place, which fails if the name is taken. ``reclaim``:
    the stream's policy removes messages, so the file gives freed pages back (auto_vacuum)."""
    if partition_count < 1:
        raise InvalidStreamError(
            f"stream {stream!r} on system {system!r}: partition count must be at least 1, got {partition_count}"
        )
    path = stream_file(root, stream)
    if not os.path.exists(path):
        os.makedirs(root, exist_ok=True)
        tmp = os.path.join(root, f".{os.path.basename(path)}.{uuid.uuid4().hex}.creating")
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                if reclaim:
                    # before the first table: freed pages can then go back to the file system
                    # (cleaner.py); a file's vacuum mode is fixed once it has tables. Only for
                    # streams that are cleaned: the mode slows appends (docs/decisions.md)
                    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                conn.execute("PRAGMA journal_mode=WAL")
                # one transaction, and no fsync until the file is whole (one, below): each
                # statement on its own was a commit and an fsync of its own, and a job's first
                # start creates its checkpoint stream (~25 ms of B5's start, which is ~3 % of it)
                conn.execute("PRAGMA synchronous=OFF")
                conn.execute("BEGIN")
                for statement in (META_SCHEMA, *CURRENT.schema):
                    conn.execute(statement)
                rows = [("partition_count", str(partition_count)), ("format", str(CURRENT.version))]
                rows += [(f"property.{k}", str(v)) for k, v in sorted((properties or {}).items())]
                conn.executemany("INSERT INTO meta (name, value) VALUES (?, ?)", rows)
                conn.execute("COMMIT")
            finally:
                conn.close()  # moves the WAL into the file
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)  # durable before it gets its name
            finally:
                os.close(fd)
            try:
                os.link(tmp, path)
                return True
            except FileExistsError:
                pass  # another process created it first: compare counts below
        finally:
            for leftover in (tmp, tmp + "-wal", tmp + "-shm"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
    conn, existing = open_stream(system, root, stream, "NORMAL", 30.0)
    conn.close()
    if existing != partition_count:
        raise StreamExistsError(
            f"stream {stream!r} on system {system!r} exists with {existing} partitions; "
            f"asked to create it with {partition_count}"
        )
    return False
