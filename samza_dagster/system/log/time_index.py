"""The log's offset-for-timestamp lookup: Kafka's ``offsetsForTimes`` (the earliest offset whose
timestamp is at or after ``ts``) on a stream file, through a max-timestamp index.

Timestamps in a partition are not monotone (an ``event_time`` comes from the producer), so an
index on ``timestamp`` alone cannot answer "earliest offset" without scanning every later
timestamp. The running maximum of the timestamps, though, *is* monotone in the offset, and the
first offset where it reaches ``ts`` is exactly the first message whose own timestamp is ``>= ts``
(every message before it is below ``ts``). So the index keeps one row per partition each time the
running maximum grows — ``time_index("partition", max_timestamp, "offset")`` — and a lookup is
one b-tree seek. Kafka's time index is the same idea, sparse per segment.

The index is built lazily, by the lookup itself: each lookup first indexes the rows written since
the last one (``time_index_state`` keeps how far each partition is indexed and the running
maximum there), in chunks of :data:`CHUNK` rows per write transaction so producers are never
held up for long. Nothing changes on the produce path, and files written before this existed get
their tables on their first lookup (``CREATE TABLE IF NOT EXISTS``: the change is additive).

Rows removed from the log after they were indexed (retention, compaction) only make an index
row a lower bound: the lookup scans forward from ``max(index hit, oldest offset)`` for the first
message whose timestamp is ``>= ts`` — immediately found when that row still exists.
"""

from __future__ import annotations

import sqlite3

from samza_dagster.system.log.storage import StreamConnection

#: Rows indexed per write transaction when catching up.
CHUNK = 200_000
_SHIFT = 40
#: Below any timestamp a message can carry (the running maximum before the first row).
_NO_MAX = -(1 << 62)

SCHEMA = (
    'CREATE TABLE IF NOT EXISTS time_index ("partition" INTEGER NOT NULL, max_timestamp INTEGER NOT NULL, '
    '"offset" INTEGER NOT NULL, PRIMARY KEY ("partition", max_timestamp)) WITHOUT ROWID',
    'CREATE TABLE IF NOT EXISTS time_index_state ("partition" INTEGER PRIMARY KEY, next_offset INTEGER NOT NULL, '
    "max_timestamp INTEGER NOT NULL)",
)

# Per table layout (formats.py): the rows ("offset", timestamp) of partition :p with :lo <= offset <
# :hi, and the column that orders them by offset. Format 2 addresses rows by id = partition << 40 |
# offset; format 3 by its spans (runs_format.py), then its head (where a partition's newest rows
# are: offsets above every span's).
_ROWS = {
    3: (
        '(SELECT m."offset" AS "offset", m.timestamp AS timestamp FROM spans s JOIN messages m '
        "ON m.id >= s.first_id + max(:lo - s.first_offset, 0) AND m.id < s.first_id + min(:hi - s.first_offset, s.length) "
        'WHERE s."partition" = :p AND s.first_offset < :hi AND s.first_offset + s.length > :lo '
        'UNION ALL SELECT "offset", timestamp FROM head WHERE "partition" = :p AND "offset" >= :lo AND "offset" < :hi)',
        '"offset"',
    ),
    2: ("(SELECT * FROM messages WHERE id >= (:p << 40) + :lo AND id < (:p << 40) + :hi)", "id"),
    1: ('(SELECT * FROM messages WHERE "partition" = :p AND "offset" >= :lo AND "offset" < :hi)', '"offset"'),
}


def _index_sql(version: int) -> str:
    rows, order = _ROWS[version]
    # a row enters the index when its timestamp is above every timestamp before it (the carried
    # maximum :carry of earlier chunks, and the window's maximum of the earlier rows of this one)
    return (
        'INSERT INTO time_index ("partition", max_timestamp, "offset") '
        'SELECT :p, timestamp, "offset" FROM ('
        f'SELECT "offset", timestamp, MAX(timestamp) OVER (ORDER BY {order} '
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before "
        f"FROM {rows}) "
        "WHERE timestamp > :carry AND (before IS NULL OR timestamp > before)"
    )


def _first_at_or_after_sql(version: int) -> str:
    rows, order = _ROWS[version]
    return f'SELECT "offset" FROM {rows} WHERE timestamp >= :ts ORDER BY {order} LIMIT 1'


def ensure_schema(conn: StreamConnection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def catch_up(conn: StreamConnection, partition: int, head: int | None) -> None:
    """Index ``partition`` up to and including offset ``head`` (its newest offset; None: empty)."""
    if head is None or _indexed_through(conn, partition) > head:
        return  # up to date: no write transaction (it would wait for producers' write lock)
    version = conn.log_format.version
    index_sql = _index_sql(version)
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            ensure_schema(conn)
            row = conn.execute(
                'SELECT next_offset, max_timestamp FROM time_index_state WHERE "partition" = ?', (partition,)
            ).fetchone()
            start, carry = (0, _NO_MAX) if row is None else (int(row[0]), int(row[1]))
            if start > head:
                conn.execute("COMMIT")
                return
            end = min(head + 1, start + CHUNK)  # exclusive
            params = {"p": partition, "lo": start, "hi": end, "carry": carry}
            conn.execute(index_sql, params)
            # every growth of the running maximum is an index row: the newest is the maximum now
            (indexed_max,) = conn.execute(
                'SELECT MAX(max_timestamp) FROM time_index WHERE "partition" = ?', (partition,)
            ).fetchone()
            new_max = carry if indexed_max is None else max(carry, int(indexed_max))
            conn.execute(
                'INSERT OR REPLACE INTO time_index_state ("partition", next_offset, max_timestamp) VALUES (?, ?, ?)',
                (partition, end, new_max),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if end > head:
            return


def _indexed_through(conn: StreamConnection, partition: int) -> int:
    """The first offset of ``partition`` not indexed yet (0 before the index exists)."""
    try:
        row = conn.execute('SELECT next_offset FROM time_index_state WHERE "partition" = ?', (partition,)).fetchone()
    except sqlite3.OperationalError:  # no such table: a file no lookup has touched yet
        return 0
    return 0 if row is None else int(row[0])


def offset_for_time(
    conn: StreamConnection, partition: int, timestamp: int, oldest: int | None, head: int | None
) -> int | None:
    """The earliest offset of ``partition`` whose timestamp is ``>= timestamp``; None if no
    message is. ``oldest``/``head``: the partition's bounds now (None when empty)."""
    if head is None or oldest is None:
        return None
    catch_up(conn, partition, head)
    hit = conn.execute(
        'SELECT "offset" FROM time_index WHERE "partition" = ? AND max_timestamp >= ? ORDER BY max_timestamp LIMIT 1',
        (partition, timestamp),
    ).fetchone()
    if hit is None:
        return None
    start = max(int(hit[0]), oldest)
    found = conn.execute(
        _first_at_or_after_sql(conn.log_format.version),
        {"p": partition, "lo": start, "hi": 1 << _SHIFT, "ts": timestamp},
    ).fetchone()
    return None if found is None else int(found[0])


def scan_offset_for_time(conn: sqlite3.Connection, version: int, partition: int, timestamp: int) -> int | None:
    """The same answer by scanning the partition in offset order (no index): the baseline the
    benchmark compares with."""
    found = conn.execute(
        _first_at_or_after_sql(version), {"p": partition, "lo": 0, "hi": 1 << _SHIFT, "ts": timestamp}
    ).fetchone()
    return None if found is None else int(found[0])
