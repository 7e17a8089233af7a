"""The two table layouts of a log stream file, and the statements that read and write each.

Both hold ``messages("partition", "offset", key, value, timestamp)``; they differ in the b-tree
the rows live in.

* **Format 2** (every file created now): a rowid table whose ``id`` is
  ``partition << 40 | offset``. A partition's messages are one contiguous run of the table's
  b-tree in offset order, so a read is one seek and a sequential scan, as before — and table
  b-tree pages keep up to a whole page of payload per row in place. Offsets go up to 2^40 per
  partition.
* **Format 1** (files written before): ``PRIMARY KEY ("partition", "offset") WITHOUT ROWID``.
  Its rows live in an index b-tree, where SQLite keeps at most about a quarter of a page of
  payload in place and spills the rest to overflow pages of its own: a 1 KiB message took
  4.6 KB of disk with 4 KiB pages (measured; 126 B for a 100-byte one). Still read and written.

A stream file says its format in ``meta`` (``format``); a file without it is format 1.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

#: A message row as the producer writes it and the consumer reads it back.
Row = tuple[int, int, bytes | None, bytes | None, int]  # partition, offset, key, value, timestamp
_PARTITION_SHIFT = 40


class LogFormat:
    """The statements of one table layout. ``read_sql``/``insert_sql`` are public so that the log
    benchmark's plain-sqlite3 baseline runs exactly the engine's statements."""

    version: int
    schema: tuple[str, ...]
    read_sql: str
    insert_sql: str

    def read(self, conn: sqlite3.Connection, partition: int, position: int, limit: int) -> list[tuple]:
        """Up to ``limit`` rows ``(offset, key, value, timestamp)`` of ``partition`` from ``position``."""
        raise NotImplementedError

    def next_offset(self, conn: sqlite3.Connection, partition: int) -> int:
        raise NotImplementedError

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
        raise NotImplementedError

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        """``(partition, oldest, newest)`` of every partition, in one statement (one snapshot)."""
        raise NotImplementedError


class RowidFormat(LogFormat):
    version = 2
    schema = (
        'CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, "partition" INTEGER NOT NULL, '
        '"offset" INTEGER NOT NULL, key BLOB, value BLOB, timestamp INTEGER NOT NULL)',
    )
    read_sql = 'SELECT "offset", key, value, timestamp FROM messages WHERE id >= ? AND id < ? ORDER BY id LIMIT ?'
    insert_sql = 'INSERT INTO messages (id, "partition", "offset", key, value, timestamp) VALUES (?, ?, ?, ?, ?, ?)'
    _max_sql = "SELECT MAX(id) FROM messages WHERE id >= ? AND id < ?"
    # Each correlated MIN/MAX over a rowid range is a single seek.
    _bounds_sql = (
        "WITH RECURSIVE p(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM p WHERE n + 1 < ?) "
        "SELECT n, (SELECT MIN(id) FROM messages WHERE id >= (n << 40) AND id < ((n + 1) << 40)), "
        "(SELECT MAX(id) FROM messages WHERE id >= (n << 40) AND id < ((n + 1) << 40)) FROM p"
    )

    def read(self, conn: sqlite3.Connection, partition: int, position: int, limit: int) -> list[tuple]:
        base = partition << _PARTITION_SHIFT
        return conn.execute(self.read_sql, (base + position, base + (1 << _PARTITION_SHIFT), limit)).fetchall()

    def next_offset(self, conn: sqlite3.Connection, partition: int) -> int:
        base = partition << _PARTITION_SHIFT
        last = conn.execute(self._max_sql, (base, base + (1 << _PARTITION_SHIFT))).fetchone()[0]
        return 0 if last is None else last - base + 1

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
        conn.executemany(self.insert_sql, [(p << _PARTITION_SHIFT | o, p, o, k, v, t) for p, o, k, v, t in rows])

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        for partition, oldest, newest in conn.execute(self._bounds_sql, (partition_count,)):
            base = partition << _PARTITION_SHIFT
            yield partition, (None if oldest is None else oldest - base), (None if newest is None else newest - base)


class WithoutRowidFormat(LogFormat):
    version = 1
    schema = (
        'CREATE TABLE IF NOT EXISTS messages ("partition" INTEGER NOT NULL, "offset" INTEGER NOT NULL, '
        'key BLOB, value BLOB, timestamp INTEGER NOT NULL, PRIMARY KEY ("partition", "offset")) WITHOUT ROWID',
    )
    read_sql = (
        'SELECT "offset", key, value, timestamp FROM messages '
        'WHERE "partition" = ? AND "offset" >= ? ORDER BY "offset" LIMIT ?'
    )
    insert_sql = 'INSERT INTO messages ("partition", "offset", key, value, timestamp) VALUES (?, ?, ?, ?, ?)'
    _max_sql = 'SELECT MAX("offset") FROM messages WHERE "partition" = ?'
    _bounds_sql = (
        "WITH RECURSIVE p(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM p WHERE n + 1 < ?) "
        'SELECT n, (SELECT MIN("offset") FROM messages WHERE "partition" = n), '
        '(SELECT MAX("offset") FROM messages WHERE "partition" = n) FROM p'
    )

    def read(self, conn: sqlite3.Connection, partition: int, position: int, limit: int) -> list[tuple]:
        return conn.execute(self.read_sql, (partition, position, limit)).fetchall()

    def next_offset(self, conn: sqlite3.Connection, partition: int) -> int:
        last = conn.execute(self._max_sql, (partition,)).fetchone()[0]
        return 0 if last is None else last + 1

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
        conn.executemany(self.insert_sql, rows)

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        yield from conn.execute(self._bounds_sql, (partition_count,))


FORMATS: dict[int, LogFormat] = {f.version: f for f in (WithoutRowidFormat(), RowidFormat())}
CURRENT = FORMATS[2]
