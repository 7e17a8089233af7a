"""The table layouts of a log stream file, and the statements that read and write each.

Each holds messages ``("partition", "offset", key, value, timestamp)``; they differ in where in
which b-tree the rows live.

* **Format 3** (every file created now; runs_format.py): messages appended in arrival order to a
  head, sealed into per-partition runs with a span directory, so a batch over many partitions
  costs about what a batch over one does, and a read of one partition is still a range scan.
* **Format 2** (files written before format 3): a rowid table whose ``id`` is
  ``partition << 40 | offset``. A partition's messages are one contiguous run of the table's
  b-tree in offset order, so a read is one seek and a sequential scan — but a batch spread over
  1,024 partitions dirties a page per row (docs/decisions.md, "Log format 3"). Table b-tree pages
  keep up to a whole page of payload per row in place. Offsets go up to 2^40 per partition.
  Still read and written.
* **Format 1** (files written before format 2): ``PRIMARY KEY ("partition", "offset") WITHOUT
  ROWID``. Its rows live in an index b-tree, where SQLite keeps at most about a quarter of a
  page of payload in place and spills the rest to overflow pages of its own, so a 1 KiB message
  took several times its size on disk (numbers: docs/benchmarks.md, "Measurements behind
  defaults in the code"). Still read and written.

A stream file says its format in ``meta`` (``format``); a file without it is format 1.

What every layout shares (the offset invariants, the statements over ``meta``) is in
format_base.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping

from samza_dagster.system.log.format_base import (
    ALL_PARTITIONS_CTE,
    LISTED_PARTITIONS_CTE,
    MAX_ROWS_PER_INSERT,
    NEXT_OFFSET_META,
    SIZE_SQL,
    LogFormat,
    Row,
    insert_in_chunks,
)
from samza_dagster.system.log.runs_format import RunsFormat

__all__ = ["CURRENT", "FORMATS", "MAX_ROWS_PER_INSERT", "NEXT_OFFSET_META", "LogFormat", "Row", "RowidFormat"]

_PARTITION_SHIFT = 40


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
    _per_partition = (
        "SELECT n, (SELECT MIN(id) FROM messages WHERE id >= (n << 40) AND id < ((n + 1) << 40)), "
        "(SELECT MAX(id) FROM messages WHERE id >= (n << 40) AND id < ((n + 1) << 40)) FROM p"
    )
    _bounds_sql = ALL_PARTITIONS_CTE + _per_partition
    _bounds_of_sql = LISTED_PARTITIONS_CTE + _per_partition

    def read(
        self, conn: sqlite3.Connection, partition: int, position: int, limit: int, end: int | None = None
    ) -> list[tuple]:
        base = partition << _PARTITION_SHIFT
        upper = base + (1 << _PARTITION_SHIFT) if end is None else base + end
        return conn.execute(self.read_sql, (base + position, upper, limit)).fetchall()

    def last_offset(self, conn: sqlite3.Connection, partition: int) -> int | None:
        base = partition << _PARTITION_SHIFT
        last = conn.execute(self._max_sql, (base, base + (1 << _PARTITION_SHIFT))).fetchone()[0]
        return None if last is None else last - base

    def scan(self, conn: sqlite3.Connection, partition: int, descending: bool = False) -> sqlite3.Cursor:
        base = partition << _PARTITION_SHIFT
        return conn.execute(
            f'SELECT "offset", key, value IS NULL, {SIZE_SQL}, timestamp FROM messages WHERE id >= ? AND id < ? '
            f"ORDER BY id {'DESC' if descending else 'ASC'}",
            (base, base + (1 << _PARTITION_SHIFT)),
        )

    def delete_range(self, conn: sqlite3.Connection, partition: int, start: int, end: int) -> int:
        base = partition << _PARTITION_SHIFT
        return conn.execute("DELETE FROM messages WHERE id >= ? AND id < ?", (base + start, base + end)).rowcount

    def delete_offsets(
        self, conn: sqlite3.Connection, partition: int, offsets: list[int], hints: Mapping[int, int] | None = None
    ) -> None:
        base = partition << _PARTITION_SHIFT
        conn.executemany("DELETE FROM messages WHERE id = ?", [(base + o,) for o in offsets])

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row], defer_seal: bool = False) -> bool:
        flat = [x for p, o, k, v, t in rows for x in (p << _PARTITION_SHIFT | o, p, o, k, v, t)]
        insert_in_chunks(conn, self.insert_sql, 6, flat)
        return False

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        return self._adjust(conn.execute(self._bounds_sql, (partition_count,)))

    def _adjust(self, rows: Iterable[tuple]) -> Iterator[tuple[int, int | None, int | None]]:
        for partition, oldest, newest in rows:
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
    _per_partition = (
        'SELECT n, (SELECT MIN("offset") FROM messages WHERE "partition" = n), '
        '(SELECT MAX("offset") FROM messages WHERE "partition" = n) FROM p'
    )
    _bounds_sql = ALL_PARTITIONS_CTE + _per_partition
    _bounds_of_sql = LISTED_PARTITIONS_CTE + _per_partition

    _read_below_sql = (
        'SELECT "offset", key, value, timestamp FROM messages '
        'WHERE "partition" = ? AND "offset" >= ? AND "offset" < ? ORDER BY "offset" LIMIT ?'
    )

    def read(
        self, conn: sqlite3.Connection, partition: int, position: int, limit: int, end: int | None = None
    ) -> list[tuple]:
        if end is None:
            return conn.execute(self.read_sql, (partition, position, limit)).fetchall()
        return conn.execute(self._read_below_sql, (partition, position, end, limit)).fetchall()

    def last_offset(self, conn: sqlite3.Connection, partition: int) -> int | None:
        return conn.execute(self._max_sql, (partition,)).fetchone()[0]

    def scan(self, conn: sqlite3.Connection, partition: int, descending: bool = False) -> sqlite3.Cursor:
        return conn.execute(
            f'SELECT "offset", key, value IS NULL, {SIZE_SQL}, timestamp FROM messages WHERE "partition" = ? '
            f'ORDER BY "offset" {"DESC" if descending else "ASC"}',
            (partition,),
        )

    def delete_range(self, conn: sqlite3.Connection, partition: int, start: int, end: int) -> int:
        return conn.execute(
            'DELETE FROM messages WHERE "partition" = ? AND "offset" >= ? AND "offset" < ?', (partition, start, end)
        ).rowcount

    def delete_offsets(
        self, conn: sqlite3.Connection, partition: int, offsets: list[int], hints: Mapping[int, int] | None = None
    ) -> None:
        conn.executemany(
            'DELETE FROM messages WHERE "partition" = ? AND "offset" = ?', [(partition, o) for o in offsets]
        )

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row], defer_seal: bool = False) -> bool:
        conn.executemany(self.insert_sql, rows)
        return False

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        yield from conn.execute(self._bounds_sql, (partition_count,))


FORMATS: dict[int, LogFormat] = {f.version: f for f in (WithoutRowidFormat(), RowidFormat(), RunsFormat())}
#: the format of every stream file created now
CURRENT = FORMATS[3]
