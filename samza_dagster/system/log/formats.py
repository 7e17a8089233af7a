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
  payload in place and spills the rest to overflow pages of its own, so a 1 KiB message took
  several times its size on disk (numbers: docs/benchmarks.md, "Measurements behind defaults in
  the code"). Still read and written.

A stream file says its format in ``meta`` (``format``); a file without it is format 1.

Offsets are never reused, and a partition's upcoming offset never goes back. Cleaning
(cleaner.py) may remove a partition's newest messages (an expired tombstone at its end, or
retention emptying it); each cleaning transaction first records the partition's next offset in
``meta`` as ``next_offset.<partition>``, and the next offset is always the larger of that floor
and the newest remaining message + 1. (Kafka gets the same guarantee by never cleaning the
active segment; here the floor makes it hold whatever the cleaner removes.)
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Iterator

#: A message row as the producer writes it and the consumer reads it back.
Row = tuple[int, int, bytes | None, bytes | None, int]  # partition, offset, key, value, timestamp
_PARTITION_SHIFT = 40
#: ``meta`` row: where an emptied partition's next offset continues (see the module docstring)
NEXT_OFFSET_META = "next_offset.{}"
#: partitions per ``bounds_of`` statement (SQLite's default limit on bound parameters is 32,766)
_PARTITIONS_PER_STATEMENT = 1000
#: the partitions ``p(n)`` the bounds statements range over: all of them, or a listed few
_ALL_PARTITIONS = "WITH RECURSIVE p(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM p WHERE n + 1 < ?) "
_LISTED_PARTITIONS = "WITH p(n) AS (VALUES {values}) "
_UPSERT_META = "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
_NEXT_OFFSETS_SQL = "SELECT name, value FROM meta WHERE name >= 'next_offset.' AND name < 'next_offset/'"
#: the most rows one INSERT statement of the current format carries (RowidFormat.insert): a power
#: of two whose parameters (6 a row) stay within SQLite's limit (32,766 since 3.32; 999 before)
MAX_ROWS_PER_INSERT = 2048 if sqlite3.sqlite_version_info >= (3, 32) else 128
#: a message's size for ``retention.bytes``: its key and value bytes
_SIZE = "coalesce(length(key), 0) + coalesce(length(value), 0)"


class LogFormat:
    """The statements of one table layout. ``read_sql``/``insert_sql`` are public so that the log
    benchmark's plain-sqlite3 baseline runs exactly the engine's statements."""

    version: int
    schema: tuple[str, ...]
    read_sql: str
    insert_sql: str

    def read(
        self, conn: sqlite3.Connection, partition: int, position: int, limit: int, end: int | None = None
    ) -> list[tuple]:
        """Up to ``limit`` rows ``(offset, key, value, timestamp)`` of ``partition`` from ``position``,
        and below offset ``end`` when given (a bounded stream's end, a last stable offset: a
        count alone would step over gaps that compaction or an abort left, past the bound)."""
        raise NotImplementedError

    def last_offset(self, conn: sqlite3.Connection, partition: int) -> int | None:
        raise NotImplementedError

    def next_offset(self, conn: sqlite3.Connection, partition: int) -> int:
        """The offset the partition's next message gets (module docstring: never below the floor
        cleaning recorded, so an offset is never given out twice)."""
        return self.next_offsets(conn, (partition,))[partition]

    def next_offsets(self, conn: sqlite3.Connection, partitions: Iterable[int]) -> dict[int, int]:
        """``next_offset`` of each of ``partitions``: one lookup of the last offset per
        partition, one read of the recorded floors for all of them."""
        floors = self.recorded_next_offsets(conn)
        result = {}
        for partition in partitions:
            last = self.last_offset(conn, partition)
            after_last = 0 if last is None else last + 1
            result[partition] = max(after_last, floors.get(partition, 0))
        return result

    def record_next_offset(self, conn: sqlite3.Connection, partition: int) -> None:
        """Keep the partition's next offset as its floor (inside the caller's write transaction),
        before removing messages that may be its newest: offsets never go back."""
        conn.execute(_UPSERT_META, (NEXT_OFFSET_META.format(partition), str(self.next_offset(conn, partition))))

    def recorded_next_offsets(self, conn: sqlite3.Connection) -> dict[int, int]:
        """Every ``next_offset.<partition>`` floor cleaning recorded (none: never cleaned)."""
        return {int(name.split(".", 1)[1]): int(value) for name, value in conn.execute(_NEXT_OFFSETS_SQL)}

    def partition_offsets(
        self, conn: sqlite3.Connection, partition_count: int, partitions: Iterable[int] | None = None
    ) -> list[tuple[int, int, int | None, int]]:
        """``(partition, oldest, newest, upcoming)`` of every partition, or only of
        ``partitions`` (two b-tree seeks each, whatever the partition count), in one read
        snapshot. ``newest`` is the newest message the partition still holds (None when it holds
        none); ``upcoming`` is where the next message goes, which cleaning may have left past
        ``newest + 1``. An empty partition's oldest is its upcoming offset — 0 if it never had
        a message (as Kafka reports a partition whose log retention emptied)."""
        conn.execute("BEGIN")
        try:
            if partitions is None:
                bounds = list(self.bounds(conn, partition_count))
            else:
                bounds = list(self.bounds_of(conn, sorted(set(partitions))))
            floors = self.recorded_next_offsets(conn)
        finally:
            conn.execute("COMMIT")
        result: list[tuple[int, int, int | None, int]] = []
        for partition, oldest, newest in bounds:
            floor = floors.get(partition, 0)
            if newest is None:
                result.append((partition, floor, None, floor))
            else:
                assert oldest is not None
                result.append((partition, oldest, newest, max(newest + 1, floor)))
        return result

    def scan(self, conn: sqlite3.Connection, partition: int, descending: bool = False) -> sqlite3.Cursor:
        """Cursor over ``(offset, key, value is null, size, timestamp)`` of every message of the
        partition in offset order (newest first when ``descending``); values are not loaded."""
        raise NotImplementedError

    def delete_range(self, conn: sqlite3.Connection, partition: int, start: int, end: int) -> int:
        """Remove the partition's messages with ``start <= offset < end``; the number removed."""
        raise NotImplementedError

    def delete_offsets(self, conn: sqlite3.Connection, partition: int, offsets: list[int]) -> None:
        raise NotImplementedError

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
        raise NotImplementedError

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        """``(partition, oldest, newest)`` of every partition, in one statement (one snapshot)."""
        raise NotImplementedError

    def bounds_of(
        self, conn: sqlite3.Connection, partitions: list[int]
    ) -> Iterator[tuple[int, int | None, int | None]]:
        """``(partition, oldest, newest)`` of the given partitions only: the bounds statement over
        a list of them instead of every partition, in chunks that stay under SQLite's limit on
        bound parameters (call inside a transaction for one snapshot)."""
        for start in range(0, len(partitions), _PARTITIONS_PER_STATEMENT):
            chunk = partitions[start : start + _PARTITIONS_PER_STATEMENT]
            values = ",".join("(?)" for _ in chunk)
            yield from self._adjust(conn.execute(self._bounds_of_sql.format(values=values), chunk))

    _bounds_of_sql: str

    def _adjust(self, rows: Iterable[tuple]) -> Iterator[tuple[int, int | None, int | None]]:
        """Rows of the bounds statements as ``(partition, oldest offset, newest offset)``."""
        return iter(rows)  # type: ignore[arg-type]


@functools.cache
def _insert_rows_sql(rows: int) -> str:
    """The current format's INSERT of ``rows`` rows (RowidFormat.insert: powers of two only)."""
    return RowidFormat.insert_sql + ", (?, ?, ?, ?, ?, ?)" * (rows - 1)


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
    _bounds_sql = _ALL_PARTITIONS + _per_partition
    _bounds_of_sql = _LISTED_PARTITIONS + _per_partition

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
            f'SELECT "offset", key, value IS NULL, {_SIZE}, timestamp FROM messages WHERE id >= ? AND id < ? '
            f"ORDER BY id {'DESC' if descending else 'ASC'}",
            (base, base + (1 << _PARTITION_SHIFT)),
        )

    def delete_range(self, conn: sqlite3.Connection, partition: int, start: int, end: int) -> int:
        base = partition << _PARTITION_SHIFT
        return conn.execute("DELETE FROM messages WHERE id >= ? AND id < ?", (base + start, base + end)).rowcount

    def delete_offsets(self, conn: sqlite3.Connection, partition: int, offsets: list[int]) -> None:
        base = partition << _PARTITION_SHIFT
        conn.executemany("DELETE FROM messages WHERE id = ?", [(base + o,) for o in offsets])

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
        """In as few statements as the batch's size in binary has ones (at most ``MAX_ROWS_PER_INSERT``
        rows each, every size's SQL compiled once). Python's sqlite3 lets go of the GIL around every
        statement step, so row-by-row inserts waited for the GIL once per row while other threads
        of the container (the producer's thread, pollers) computed."""
        flat = [x for p, o, k, v, t in rows for x in (p << _PARTITION_SHIFT | o, p, o, k, v, t)]
        execute, start, left = conn.execute, 0, len(flat) // 6
        while left:
            size = min(MAX_ROWS_PER_INSERT, 1 << (left.bit_length() - 1))
            execute(_insert_rows_sql(size), flat[start : start + 6 * size])
            start += 6 * size
            left -= size

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
    _bounds_sql = _ALL_PARTITIONS + _per_partition
    _bounds_of_sql = _LISTED_PARTITIONS + _per_partition

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
            f'SELECT "offset", key, value IS NULL, {_SIZE}, timestamp FROM messages WHERE "partition" = ? '
            f'ORDER BY "offset" {"DESC" if descending else "ASC"}',
            (partition,),
        )

    def delete_range(self, conn: sqlite3.Connection, partition: int, start: int, end: int) -> int:
        return conn.execute(
            'DELETE FROM messages WHERE "partition" = ? AND "offset" >= ? AND "offset" < ?', (partition, start, end)
        ).rowcount

    def delete_offsets(self, conn: sqlite3.Connection, partition: int, offsets: list[int]) -> None:
        conn.executemany(
            'DELETE FROM messages WHERE "partition" = ? AND "offset" = ?', [(partition, o) for o in offsets]
        )

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
        conn.executemany(self.insert_sql, rows)

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        yield from conn.execute(self._bounds_sql, (partition_count,))


FORMATS: dict[int, LogFormat] = {f.version: f for f in (WithoutRowidFormat(), RowidFormat())}
CURRENT = FORMATS[2]
