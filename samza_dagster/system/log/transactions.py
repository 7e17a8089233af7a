"""Transactions on the embedded log: a producer's writes to several stream files become visible
to ``read_committed`` readers together, or are removed — Kafka's model, on SQLite files.

SQLite commits atomically within one file only (in WAL mode ``ATTACH`` does not make a
transaction atomic across files), so a transaction is made of per-file steps around one commit
point, as in Kafka (docs/decisions.md, "Exactly-once on the log"):

* **Transactional id and epoch.** A producer is identified by a transactional id (the container's:
  ``<job.name>-<job.id>-<container>``); its record in the *state file* (the ``txn_state`` table of
  the job's checkpoint stream file) holds its epoch, the sequence number of its last committed
  transaction and the streams it ever wrote to. ``init`` raises the epoch: every write, commit and
  registration of the previous instance (a zombie) checks the epoch and fails from then on.
* **Open rows.** A transactional write is an ordinary batch (one SQLite transaction in the
  stream's file, offsets assigned as always) that also records each partition's offset range in
  ``txn_open`` (producer, epoch, sequence) and checks the file's ``txn_producers`` epoch of the
  producer under the same write lock (fencing per file). A stream is registered in the state file
  before its first transactional write, so whoever recovers the producer knows every file it may
  have open rows in.
* **Commit point.** One SQLite transaction in the state file checks the epoch, writes the
  buffered checkpoint messages (committed at once: they are in the state file itself) and records
  the sequence as committed. That is the moment the transaction commits.
* **Markers.** Then, per stream file written, one short transaction deletes the producer's
  ``txn_open`` rows of committed sequences: the rows become readable by ``read_committed``.
  A crash between the commit point and the markers is finished by the next ``init`` (roll forward).
* **Abort** (an explicit abort, or ``init`` finding a sequence that never committed) deletes the
  transaction's messages from each file — readers of ``read_committed`` never saw them, and the
  log can remove them, where Kafka must keep them and filter — after recording each partition's
  next offset (formats.NEXT_OFFSET_META), so offsets are never given out twice.

``read_committed`` readers stop each partition at its *last stable offset*, the first offset of
the oldest open transaction range in it (``txn_open``), one small indexed query per stream per
poll. ``read_uncommitted`` readers (the default outside exactly-once, as Kafka's) read every row,
including open ones that may be removed by an abort.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping

from samza_dagster.system.errors import SamzaSystemError
from samza_dagster.system.log.formats import LogFormat
from samza_dagster.system.log.storage import write_transaction

#: tables every transactionally written stream file has (created on first use; ``IF NOT EXISTS``)
STREAM_SCHEMA = (
    'CREATE TABLE IF NOT EXISTS txn_open ("partition" INTEGER NOT NULL, first_offset INTEGER NOT NULL, '
    "last_offset INTEGER NOT NULL, producer TEXT NOT NULL, epoch INTEGER NOT NULL, seq INTEGER NOT NULL, "
    'PRIMARY KEY ("partition", first_offset)) WITHOUT ROWID',
    "CREATE TABLE IF NOT EXISTS txn_producers (producer TEXT PRIMARY KEY, epoch INTEGER NOT NULL) WITHOUT ROWID",
)
#: the producers' records, in the state file (the checkpoint stream's file)
STATE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS txn_state (producer TEXT PRIMARY KEY, epoch INTEGER NOT NULL, "
    "committed_seq INTEGER NOT NULL, streams TEXT NOT NULL) WITHOUT ROWID",
)
_LSO_SQL = 'SELECT "partition", MIN(first_offset) FROM txn_open GROUP BY "partition"'


class TransactionStateError(SamzaSystemError):
    """A transaction call out of order (``commit_transaction`` before ``init_transactions``,
    ``init_transactions`` twice): a programming error, named with the producer's system."""


class ProducerFencedError(SamzaSystemError):
    """A newer instance of the same transactional producer started (its epoch is higher): this
    one is a zombie and may not write, register or commit. Names the producer and both epochs."""

    def __init__(self, producer: str, epoch: int, current: int, where: str) -> None:
        super().__init__(
            f"transactional producer {producer!r} (epoch {epoch}) is fenced: {where} has epoch {current}, "
            "so a newer instance of it started; this instance must stop"
        )
        self.producer = producer
        self.epoch = epoch
        self.current = current


def ensure_stream_tables(conn: sqlite3.Connection) -> None:
    for statement in STREAM_SCHEMA:
        conn.execute(statement)


def ensure_state_tables(conn: sqlite3.Connection) -> None:
    for statement in STATE_SCHEMA:
        conn.execute(statement)


def last_stable_offsets(conn: sqlite3.Connection) -> dict[int, int]:
    """Per partition with an open transaction, the first offset a ``read_committed`` reader may
    not read yet (partitions without one are absent: everything is stable)."""
    return dict(conn.execute(_LSO_SQL).fetchall())


def stable_ends(conn: sqlite3.Connection, fmt: LogFormat, partitions: Iterable[int]) -> dict[int, int]:
    """Per partition, the offset below which no transaction is open, in one snapshot: the last
    stable offset, or the next offset when nothing is open (what the cleaner may compact up to:
    a message of an open transaction must not supersede a committed one it may never replace).
    In the caller's read transaction when one is open (the cleaner's pass)."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        try:
            lso = last_stable_offsets(conn)
        except sqlite3.OperationalError:  # never written transactionally: no table
            lso = {}
        partitions = list(partitions)
        ends = fmt.next_offsets(conn, [p for p in partitions if p not in lso])  # one call: per partition was quadratic
        ends.update((p, lso[p]) for p in partitions if p in lso)
        return ends
    finally:
        if own:
            conn.execute("COMMIT")


# -- in a stream file (each call inside the caller's write transaction) -------------------------
def check_file_epoch(conn: sqlite3.Connection, producer: str, epoch: int, stream: str) -> None:
    """Fence per file: raise if a newer instance recovered this file; record our epoch the first
    time we write to it."""
    row = conn.execute("SELECT epoch FROM txn_producers WHERE producer = ?", (producer,)).fetchone()
    if row is None or row[0] < epoch:
        conn.execute(
            "INSERT INTO txn_producers (producer, epoch) VALUES (?, ?) "
            "ON CONFLICT (producer) DO UPDATE SET epoch = excluded.epoch",
            (producer, epoch),
        )
    elif row[0] > epoch:
        raise ProducerFencedError(producer, epoch, row[0], f"stream {stream!r}")


def record_open(
    conn: sqlite3.Connection, producer: str, epoch: int, seq: int, ranges: Mapping[int, tuple[int, int]]
) -> None:
    """Record the offset ranges (partition → first, last) a transactional batch just wrote."""
    conn.executemany(
        'INSERT INTO txn_open ("partition", first_offset, last_offset, producer, epoch, seq) VALUES (?, ?, ?, ?, ?, ?)',
        [(p, first, last, producer, epoch, seq) for p, (first, last) in ranges.items()],
    )


def write_markers(conn: sqlite3.Connection, producer: str, committed_seq: int) -> None:
    """Commit markers of one file: the producer's ranges of committed sequences become stable."""
    with write_transaction(conn):
        conn.execute("DELETE FROM txn_open WHERE producer = ? AND seq <= ?", (producer, committed_seq))


def resolve_file(
    conn: sqlite3.Connection,
    fmt: LogFormat,
    producer: str,
    committed_seq: int,
    *,
    fence_epoch: int | None = None,
    abort: tuple[int, int] | None = None,
) -> int:
    """Settle the producer's open ranges in one file, in one transaction: ranges of committed
    sequences become stable (roll forward), the others are removed with their messages (abort),
    each partition's next offset recorded first so it never goes back. With ``fence_epoch``
    (``init``) every older instance is fenced from the file and all of its open ranges settled;
    with ``abort`` = (epoch, sequence) only that transaction's ranges are removed (an explicit
    abort by the live producer — never a newer instance's ranges, which share the sequence
    number). Returns the number of messages removed."""
    removed = 0
    with write_transaction(conn):
        ensure_stream_tables(conn)
        if fence_epoch is not None:
            conn.execute(
                "INSERT INTO txn_producers (producer, epoch) VALUES (?, ?) "
                "ON CONFLICT (producer) DO UPDATE SET epoch = MAX(epoch, excluded.epoch)",
                (producer, fence_epoch),
            )
        rows = conn.execute(
            'SELECT "partition", first_offset, last_offset, epoch, seq FROM txn_open WHERE producer = ?', (producer,)
        ).fetchall()
        floored: set[int] = set()
        settled: list[tuple[int, int]] = []
        for partition, first, last, epoch, seq in rows:
            if abort is not None and (epoch, seq) != abort:
                continue
            settled.append((partition, first))
            if seq <= committed_seq and abort is None:
                continue  # committed: the range just becomes stable
            if partition not in floored:
                floored.add(partition)
                fmt.record_next_offset(conn, partition)
            removed += fmt.delete_range(conn, partition, first, last + 1)
        conn.executemany('DELETE FROM txn_open WHERE "partition" = ? AND first_offset = ?', settled)
    return removed


# -- in the state file -------------------------------------------------------------------------
class ProducerState:
    """A producer's record in the state file, as ``init`` left it."""

    __slots__ = ("producer", "epoch", "committed_seq", "streams")

    def __init__(self, producer: str, epoch: int, committed_seq: int, streams: set[str]) -> None:
        self.producer = producer
        self.epoch = epoch
        self.committed_seq = committed_seq
        self.streams = streams


def _read_state(conn: sqlite3.Connection, producer: str) -> tuple[int, int, set[str]] | None:
    row = conn.execute("SELECT epoch, committed_seq, streams FROM txn_state WHERE producer = ?", (producer,)).fetchone()
    return None if row is None else (row[0], row[1], set(json.loads(row[2])))


def _check_epoch(conn: sqlite3.Connection, producer: str, epoch: int) -> tuple[int, int, set[str]]:
    state = _read_state(conn, producer)
    if state is None or state[0] != epoch:
        raise ProducerFencedError(producer, epoch, -1 if state is None else state[0], "the transaction state")
    return state


def bump_epoch(conn: sqlite3.Connection, producer: str) -> ProducerState:
    """``init``: the producer's next epoch (fencing every older instance), in one transaction."""
    with write_transaction(conn):
        ensure_state_tables(conn)
        state = _read_state(conn, producer)
        epoch, committed, streams = (0, 0, set()) if state is None else (state[0] + 1, state[1], state[2])
        conn.execute(
            "INSERT INTO txn_state (producer, epoch, committed_seq, streams) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (producer) DO UPDATE SET epoch = excluded.epoch",
            (producer, epoch, committed, json.dumps(sorted(streams))),
        )
    return ProducerState(producer, epoch, committed, streams)


def register_streams(conn: sqlite3.Connection, producer: str, epoch: int, streams: Iterable[str]) -> None:
    """Add streams to the producer's record before its first transactional write to them (Kafka's
    AddPartitionsToTxn, per file and once per producer lifetime rather than per transaction)."""
    with write_transaction(conn):
        _, _, known = _check_epoch(conn, producer, epoch)
        conn.execute(
            "UPDATE txn_state SET streams = ? WHERE producer = ?", (json.dumps(sorted(known | set(streams))), producer)
        )


def mark_committed(conn: sqlite3.Connection, producer: str, epoch: int, seq: int) -> None:
    """The commit point's own statement (inside the caller's transaction on the state file,
    after the checkpoint rows): the epoch is checked, the sequence becomes committed."""
    _check_epoch(conn, producer, epoch)
    conn.execute("UPDATE txn_state SET committed_seq = ? WHERE producer = ?", (seq, producer))
