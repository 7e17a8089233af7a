"""What every table layout of a log stream file shares (formats.py lists the layouts).

Offsets are never reused, and a partition's upcoming offset never goes back. Cleaning
(cleaner.py) may remove a partition's newest messages (an expired tombstone at its end, or
retention emptying it); each cleaning transaction first records the partition's next offset in
``meta`` as ``next_offset.<partition>``, and the next offset is always the larger of that floor
and the newest remaining message + 1. (Kafka gets the same guarantee by never cleaning the
active segment; here the floor makes it hold whatever the cleaner removes.)
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence

#: A message row as the producer writes it and the consumer reads it back.
Row = tuple[int, int, bytes | None, bytes | None, int]  # partition, offset, key, value, timestamp
_PARTITION_SHIFT = 40
#: ``meta`` row: where an emptied partition's next offset continues (see the module docstring)
NEXT_OFFSET_META = "next_offset.{}"
#: partitions per ``bounds_of`` statement (SQLite's default limit on bound parameters is 32,766)
_PARTITIONS_PER_STATEMENT = 1000
#: the partitions ``p(n)`` the bounds statements range over: all of them, or a listed few
ALL_PARTITIONS_CTE = "WITH RECURSIVE p(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM p WHERE n + 1 < ?) "
LISTED_PARTITIONS_CTE = "WITH p(n) AS (VALUES {values}) "
UPSERT_META = "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
_NEXT_OFFSETS_SQL = "SELECT name, value FROM meta WHERE name >= 'next_offset.' AND name < 'next_offset/'"
_NEXT_OFFSETS_OF_SQL = "SELECT name, value FROM meta WHERE name IN (SELECT value FROM json_each(?))"
#: the most rows one INSERT statement of the current format carries (RowidFormat.insert): a power
#: of two whose parameters (6 a row) stay within SQLite's limit (32,766 since 3.32; 999 before)
MAX_ROWS_PER_INSERT = 2048 if sqlite3.sqlite_version_info >= (3, 32) else 128
#: a message's size for ``retention.bytes``: its key and value bytes
SIZE_SQL = "coalesce(length(key), 0) + coalesce(length(value), 0)"


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

    def new_read_state(self) -> object | None:
        """State a reader of one stream keeps between ``read_many`` calls for the layout's use
        (format 3's place in its head); None for layouts that read a partition with one seek."""
        return None

    def read_many(
        self,
        conn: sqlite3.Connection,
        requests: Sequence[tuple[int, int, int | None]],
        limit: int,
        state: object | None = None,
    ) -> dict[int, list[tuple]]:
        """``read`` of each ``(partition, position, end)``: the consumer's poll of one stream.
        ``state``: what ``new_read_state`` gave the caller for this stream."""
        return {p: self.read(conn, p, position, limit, end) for p, position, end in requests}

    def last_offset(self, conn: sqlite3.Connection, partition: int) -> int | None:
        raise NotImplementedError

    def next_offset(self, conn: sqlite3.Connection, partition: int) -> int:
        """The offset the partition's next message gets (module docstring: never below the floor
        cleaning recorded, so an offset is never given out twice)."""
        return self.next_offsets(conn, (partition,))[partition]

    def next_offsets(self, conn: sqlite3.Connection, partitions: Iterable[int]) -> dict[int, int]:
        """``next_offset`` of each of ``partitions``: one lookup of the last offset per
        partition, one read of the recorded floors for all of them."""
        partitions = list(partitions)
        floors = self.recorded_next_offsets(conn, partitions)
        result = {}
        for partition in partitions:
            last = self.last_offset(conn, partition)
            after_last = 0 if last is None else last + 1
            result[partition] = max(after_last, floors.get(partition, 0))
        return result

    def record_next_offset(self, conn: sqlite3.Connection, partition: int) -> None:
        """Keep the partition's next offset as its floor (inside the caller's write transaction),
        before removing messages that may be its newest: offsets never go back."""
        conn.execute(UPSERT_META, (NEXT_OFFSET_META.format(partition), str(self.next_offset(conn, partition))))

    def recorded_next_offsets(
        self, conn: sqlite3.Connection, partitions: Iterable[int] | None = None
    ) -> dict[int, int]:
        """The ``next_offset.<partition>`` floors cleaning recorded (none: never cleaned), of every
        partition or only of ``partitions`` — a file cleaned at 1,024 partitions has a floor each,
        and reading all of them for every partition asked made a cleaning pass quadratic."""
        if partitions is None:
            rows = conn.execute(_NEXT_OFFSETS_SQL)
        else:
            names = json.dumps([NEXT_OFFSET_META.format(p) for p in partitions])
            rows = conn.execute(_NEXT_OFFSETS_OF_SQL, (names,))
        return {int(name.split(".", 1)[1]): int(value) for name, value in rows}

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
                floors = self.recorded_next_offsets(conn)
            else:
                asked = sorted(set(partitions))
                bounds = list(self.bounds_of(conn, asked))
                floors = self.recorded_next_offsets(conn, asked)
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

    def delete_offsets(
        self, conn: sqlite3.Connection, partition: int, offsets: list[int], hints: Mapping[int, int] | None = None
    ) -> None:
        """Remove the partition's messages at ``offsets``. ``hints``: where a layout may find some
        of them, from this pass's scanner (``PassScanner.hints``; a hint that no longer holds is
        not used)."""
        raise NotImplementedError

    def scanner(self, conn: sqlite3.Connection) -> PassScanner:
        """Scans of many partitions in the caller's read transaction (the cleaner's pass)."""
        return PassScanner(self, conn)

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row], defer_seal: bool = False) -> bool:
        """Append ``rows`` inside the caller's write transaction. True when the layout is due
        housekeeping that ``defer_seal`` left to the caller, who runs ``seal_if_due`` in a
        transaction of its own (format 3's head seal, runs_format.py); False otherwise."""
        raise NotImplementedError

    def seal_if_due(self, conn: sqlite3.Connection) -> bool:
        """Inside the caller's write transaction: the housekeeping ``insert`` deferred, if it is
        still due (another writer may have done it since); whether it ran."""
        return False

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
def _insert_rows_sql(insert_sql: str, columns: int, rows: int) -> str:
    """``insert_sql`` (one row's VALUES) extended to ``rows`` rows."""
    return insert_sql + (", (" + ", ".join("?" * columns) + ")") * (rows - 1)


def insert_in_chunks(conn: sqlite3.Connection, insert_sql: str, columns: int, flat: list) -> None:
    """Insert the rows whose ``columns`` values follow each other in ``flat``, in as few statements
    as the row count in binary has ones (at most ``MAX_ROWS_PER_INSERT`` rows each, every size's
    SQL compiled once). Python's sqlite3 lets go of the GIL around every statement step, so
    row-by-row inserts waited for the GIL once per row while other threads of the container (the
    producer's thread, pollers) computed."""
    execute, start, left = conn.execute, 0, len(flat) // columns
    while left:
        size = min(MAX_ROWS_PER_INSERT, 1 << (left.bit_length() - 1))
        execute(_insert_rows_sql(insert_sql, columns, size), flat[start : start + columns * size])
        start += columns * size
        left -= size


class PassScanner:
    """``scan(partition, descending)`` for many partitions of one file, all in the caller's read
    transaction: here each is the layout's own ``scan``; a layout whose partitions share rows
    (format 3's head) reads those once for every partition (runs_format.py). ``hints(partition)``:
    what ``delete_offsets`` may use to find the scanned messages again (none here)."""

    def __init__(self, log_format: LogFormat, conn: sqlite3.Connection) -> None:
        self._format = log_format
        self._conn = conn

    def scan(self, partition: int, descending: bool = False) -> sqlite3.Cursor:
        return self._format.scan(self._conn, partition, descending)

    def hints(self, partition: int) -> Mapping[int, int] | None:
        return None
