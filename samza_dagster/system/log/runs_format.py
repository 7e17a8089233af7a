"""Format 3: messages appended in arrival order to a *head*, sealed into per-partition *runs*.

Formats 1 and 2 keep each partition's rows contiguous, so a batch spread over many partitions
dirties about one b-tree page per row and SQLite's WAL writes each of those pages whole at every
commit: format 2 appends ~0.15–0.2 as fast at 1,024 partitions as at 4 (docs/decisions.md, "Log
format 3", has the measurements that chose this layout). Format 3 lands every insert at the right
edge of a b-tree, which SQLite does cheaply, and a sealed row is never written again:

* ``head(seq, partition, offset, key, value, timestamp)`` — a batch touching many partitions is
  appended here in arrival order, with no per-partition index (an index would dirty a page per
  partition per commit again). ``head_marks`` gets one row per such batch: each partition's first
  and last offset in it, packed, so next offsets and seals never scan the head.
* ``messages(id, partition, offset, key, value, timestamp)`` — sealed rows. Every
  ``seal_rows`` head rows, one statement moves the whole head here, sorted by (partition, offset),
  after the table's last id: one *run*. A batch with at least ``direct_rows_per_partition`` rows
  per partition it touches, written while the head is empty, is a run of its own at once — a
  narrow producer writes each row once.
* ``spans(partition, first_offset, first_id, length)`` — where each partition's rows of each run
  are: offset ``o`` of the span is row ``first_id + o - first_offset`` (holes where an abort or
  compaction removed a row), so a read of one partition is format 2's range query over ids.

Invariant: a partition's head rows all have offsets above its spans' (the head is sealed whole, and
a batch skips the head only when the head is empty), so a read looks in the spans, then the head.
Reads that go on from the spans into the head run in one read transaction: a seal between two
statements would otherwise move rows out of the head after the spans were read.

Rows still in the head have no per-partition access: ``read_many`` scans the head once for every
partition asked, in arrival order, and remembers per partition where its scan stopped.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain
from operator import itemgetter

from samza_dagster.system.log.format_base import SIZE_SQL, UPSERT_META, LogFormat, PassScanner, Row, insert_in_chunks

#: ``meta``: the id the next run starts at (ids are never reused, even after retention)
NEXT_ID_META = "runs.next_id"
#: the most head rows one statement of a head scan returns
_HEAD_CHUNK = 2048

_HEAD_INSERT = 'INSERT INTO head ("partition", "offset", key, value, timestamp) VALUES (?, ?, ?, ?, ?)'
# (spans and bases go in multi-row statements, as rows do: an ``executemany`` lets go of the GIL
# at every row, and the sealer's thread (sealer.py) waited for it 1,024 times per seal while the
# producer's ``send`` ran)
_SPAN_INSERT = "INSERT INTO spans VALUES (?, ?, ?, ?)"
_SEAL_BASE_INSERT = "INSERT INTO temp.seal_base VALUES (?, ?)"
_RUN_INSERT = 'INSERT INTO messages (id, "partition", "offset", key, value, timestamp) VALUES (?, ?, ?, ?, ?, ?)'
_SPAN_AT = (
    'SELECT first_offset, first_id, length FROM spans WHERE "partition" = ? AND first_offset <= ? '
    "ORDER BY first_offset DESC LIMIT 1"
)
_SPAN_FROM = (
    'SELECT first_offset, first_id, length FROM spans WHERE "partition" = ? AND first_offset >= ? '
    "ORDER BY first_offset LIMIT 1"
)
_READ_HEAD = (
    'SELECT seq, "partition", "offset", key, value, timestamp FROM head WHERE seq > ? '
    'AND "partition" IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?'
)
_READ_RUN = 'SELECT "offset", key, value, timestamp FROM messages WHERE id >= ? AND id < ? ORDER BY id LIMIT ?'


def _pack(values: list[int]) -> bytes:
    packed = array("q", values)
    if sys.byteorder == "big":  # stored little-endian, so a file moves between machines
        packed.byteswap()
    return packed.tobytes()


def _unpack(blob: bytes) -> array:
    values = array("q")
    values.frombytes(blob)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _marks(conn: sqlite3.Connection, after: int) -> Iterator[tuple[int, dict[int, tuple[int, int]]]]:
    """The head's marks with seq above ``after``, in order: (the batch's first head seq, partition
    -> (first, last) offset in the batch)."""
    for _seq, first_seq, blob in conn.execute(
        "SELECT seq, first_seq, offsets FROM head_marks WHERE seq > ? ORDER BY seq", (after,)
    ):
        values = _unpack(blob)
        yield first_seq, dict(zip(values[0::3], zip(values[1::3], values[2::3], strict=True), strict=True))


class HeadReadState:
    """What a reader of one stream keeps between ``read_many`` calls, valid while no run is written
    (``generation``: the next run id it was taken at):

    * ``cursors`` — partition -> (position, seq): every head row of the partition up to ``seq``
      lies below ``position``, so a consumer at the tail scans only rows appended since;
    * ``marks`` — the head's marks read so far (first head seq of the batch, its ranges), so a
      partition read in the head for the first time starts its scan at the first batch holding
      its position, not at the head's first row."""

    __slots__ = ("generation", "cursors", "marks", "marks_seen", "last_offsets")

    def __init__(self) -> None:
        self.generation = -1
        self.cursors: dict[int, tuple[int, int]] = {}
        self.marks: list[tuple[int, dict[int, tuple[int, int]]]] = []
        self.marks_seen = 0  # the seq of the last mark in ``marks``
        #: partition -> its newest offset in the head, as of ``marks``: a scan that reaches it
        #: stops looking for the partition instead of reading on to the head's end
        self.last_offsets: dict[int, int] = {}

    def renew(self, generation: int) -> None:
        if generation != self.generation:
            self.generation = generation
            self.cursors.clear()
            self.marks.clear()
            self.last_offsets.clear()
            self.marks_seen = 0

    def refresh_marks(self, conn: sqlite3.Connection) -> None:
        """Read the marks written since the last call; ``last_offsets`` follows them."""
        fresh = conn.execute("SELECT seq FROM head_marks ORDER BY seq DESC LIMIT 1").fetchone()
        if fresh is not None and fresh[0] > self.marks_seen:
            for first_seq, batch in _marks(conn, self.marks_seen):
                self.marks.append((first_seq, batch))
                self.last_offsets.update(zip(batch, map(itemgetter(1), batch.values()), strict=True))
            self.marks_seen = fresh[0]

    def start_of(self, partition: int, position: int) -> int | None:
        """A head seq to scan from for ``partition`` at ``position`` (every row of it at or before
        that seq lies below ``position``), or None: the head holds no offset of it that high."""
        cursor = self.cursors.get(partition)
        if cursor is not None and cursor[0] == position:
            return cursor[1]
        for first_seq, batch in self.marks:
            span = batch.get(partition)
            if span is not None and span[1] >= position:
                return first_seq - 1
        return None


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction around several statements (or the caller's, when one is open)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


class _ChainedCursor:
    """``scan``'s result: the rows of several statements in turn, in one read snapshot, with the
    part of the cursor interface the cleaner uses."""

    def __init__(self, conn: sqlite3.Connection, statements: Iterator[Iterable[tuple]]) -> None:
        self._own = not conn.in_transaction
        self._conn = conn
        if self._own:
            conn.execute("BEGIN")
        self._rows = (row for cursor in statements for row in cursor)

    def __iter__(self) -> Iterator[tuple]:
        return self._rows

    def fetchone(self) -> tuple | None:
        return next(self._rows, None)

    def close(self) -> None:
        self._rows.close()
        if self._own and self._conn.in_transaction:
            self._conn.execute("COMMIT")
        self._own = False


class HeadPassScanner(PassScanner):
    """Scans of many partitions in the caller's read transaction, the head read once for all of
    them. ``RunsFormat.scan`` finds a partition's head rows by a scan of the whole head (it has no
    per-partition index), so a cleaning pass over 1,024 partitions scanned a head of 28,000 rows
    1,024 times — 0.5–1.0 CPU s for a pass that removed nothing (issue 54's section of
    docs/benchmarks.md). Here the first scan that reaches the head reads it whole, grouped by
    partition in arrival order, with each row's seq: ``hints(partition)`` (offset -> seq) lets
    ``delete_offsets`` delete head rows by their rowid. The head's rows are held for the pass
    (keys, sizes and timestamps, not values)."""

    def __init__(self, log_format: RunsFormat, conn: sqlite3.Connection) -> None:
        super().__init__(log_format, conn)
        self._runs = log_format
        self._head: dict[int, list[tuple]] | None = None
        self._seqs: dict[int, dict[int, int]] = {}

    def _head_rows(self, partition: int) -> list[tuple]:
        if self._head is None:
            head: dict[int, list[tuple]] = {}
            seqs: dict[int, dict[int, int]] = {}
            for seq, p, offset, key, tombstone, size, timestamp in self._conn.execute(
                f'SELECT seq, "partition", "offset", key, value IS NULL, {SIZE_SQL}, timestamp FROM head ORDER BY seq'
            ):
                head.setdefault(p, []).append((offset, key, tombstone, size, timestamp))
                seqs.setdefault(p, {})[offset] = seq
            self._head, self._seqs = head, seqs
        return self._head.get(partition, [])

    def scan(self, partition: int, descending: bool = False) -> sqlite3.Cursor:
        conn, runs = self._conn, self._runs
        columns = f'"offset", key, value IS NULL, {SIZE_SQL}, timestamp'
        order = "DESC" if descending else "ASC"

        def statements() -> Iterator[Iterable[tuple]]:
            spans = runs._spans(conn, partition)
            if descending:
                yield reversed(self._head_rows(partition))
            for _, first_id, length in reversed(spans) if descending else spans:
                yield conn.execute(
                    f"SELECT {columns} FROM messages WHERE id >= ? AND id < ? ORDER BY id {order}",
                    (first_id, first_id + length),
                )
            if not descending:
                yield self._head_rows(partition)  # read only when a scan gets this far

        return _ChainedCursor(conn, statements())  # type: ignore[return-value]

    def hints(self, partition: int) -> Mapping[int, int] | None:
        return self._seqs.get(partition) if self._head is not None else None


class RunsFormat(LogFormat):
    version = 3
    schema = (
        'CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, "partition" INTEGER NOT NULL, '
        '"offset" INTEGER NOT NULL, key BLOB, value BLOB, timestamp INTEGER NOT NULL)',
        'CREATE TABLE IF NOT EXISTS spans ("partition" INTEGER NOT NULL, first_offset INTEGER NOT NULL, '
        'first_id INTEGER NOT NULL, length INTEGER NOT NULL, PRIMARY KEY ("partition", first_offset)) WITHOUT ROWID',
        'CREATE TABLE IF NOT EXISTS head (seq INTEGER PRIMARY KEY AUTOINCREMENT, "partition" INTEGER NOT NULL, '
        '"offset" INTEGER NOT NULL, key BLOB, value BLOB, timestamp INTEGER NOT NULL)',
        "CREATE TABLE IF NOT EXISTS head_marks (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "first_seq INTEGER NOT NULL, offsets BLOB NOT NULL)",
    )
    read_sql = _READ_RUN
    insert_sql = _HEAD_INSERT
    #: head rows that trigger a seal. Appends stay flat up to 1,024 partitions from 32,000 on; a
    #: bigger head costs readers of a backlog at width (each read of a few partitions scans the
    #: head's other partitions' rows too), a smaller one shortens each partition's rows of a run.
    #: docs/decisions.md, "Log format 3", has the measurements.
    seal_rows = 32_000
    #: a batch with at least this many rows per partition it touches is written as a run at once
    direct_rows_per_partition = 16
    #: a head this many times ``seal_rows`` is sealed by the writer that finds it so, even when it
    #: deferred seals to a sealer (sealer.py) that has fallen behind or failed
    seal_backlog = 4

    # -- writes ---------------------------------------------------------------------------------
    def insert(self, conn: sqlite3.Connection, rows: Iterable[Row], defer_seal: bool = False) -> bool:
        """Inside the caller's write transaction: a run of its own when the batch is narrow and the
        head empty, else into the head, sealed when it reaches ``seal_rows`` — or, with
        ``defer_seal``, left for the caller's ``seal_if_due`` (True returned) until the head is
        ``seal_backlog`` times that, when it is sealed here whatever the caller asked.

        ``rows`` hold each partition's offsets in ascending order, as the producer assigns them.
        Each partition's first and last offset come from C loops (``map``, ``zip``, ``dict``): a
        Python loop grouping the rows by partition cost a fifth of the head's insert statement."""
        rows = rows if isinstance(rows, list) else list(rows)
        if not rows:
            return False
        partitions = list(map(itemgetter(0), rows))
        offsets = list(map(itemgetter(1), rows))
        last = dict(zip(partitions, offsets, strict=True))  # the last row of a partition wins: its newest offset
        first = dict(zip(reversed(partitions), reversed(offsets), strict=True))  # here the first row wins
        narrow = len(rows) >= self.direct_rows_per_partition * len(last)
        # the head is empty when it has no marks (rows an abort removed still have theirs: their
        # offsets belong to the head's range, above every span, until the next seal)
        if narrow and conn.execute("SELECT 1 FROM head_marks LIMIT 1").fetchone() is None:
            self._write_run(conn, rows, first, last)
            return False
        insert_in_chunks(conn, _HEAD_INSERT, 5, list(chain.from_iterable(rows)))
        first_seq, last_seq = _head_seqs(conn)
        marks = list(chain.from_iterable(zip(last, map(first.__getitem__, last), last.values(), strict=True)))
        # this batch's rows took the seqs up to last_seq, one each, under the caller's write lock
        conn.execute(
            "INSERT INTO head_marks (first_seq, offsets) VALUES (?, ?)", (last_seq - len(rows) + 1, _pack(marks))
        )
        head_rows = last_seq - first_seq + 1
        if head_rows < self.seal_rows:
            return False
        if defer_seal and head_rows < self.seal_backlog * self.seal_rows:
            return True
        self.seal(conn)
        return False

    def seal_if_due(self, conn: sqlite3.Connection) -> bool:
        """Seal the head if it holds ``seal_rows`` (inside the caller's write transaction)."""
        first_seq, last_seq = _head_seqs(conn)
        if last_seq - first_seq + 1 < self.seal_rows:
            return False
        self.seal(conn)
        return True

    def _write_run(
        self, conn: sqlite3.Connection, rows: list[Row], first: dict[int, int], last: dict[int, int]
    ) -> None:
        """``rows`` as one run: by partition, each partition's span after the previous one's."""
        next_id = self._next_id(conn)
        spans: list[tuple[int, int, int, int]] = []
        for p in sorted(last):
            length = last[p] - first[p] + 1
            spans.append((p, first[p], next_id, length))
            next_id += length
        ordered = sorted(rows, key=itemgetter(0))  # stable: each partition's rows keep their order
        base = {p: first_id - first_offset for p, first_offset, first_id, _ in spans}
        flat = [x for p, o, k, v, t in ordered for x in (base[p] + o, p, o, k, v, t)]
        insert_in_chunks(conn, _RUN_INSERT, 6, flat)
        insert_in_chunks(conn, _SPAN_INSERT, 4, list(chain.from_iterable(spans)))
        conn.execute(UPSERT_META, (NEXT_ID_META, str(next_id)))

    def seal(self, conn: sqlite3.Connection) -> None:
        """Move the whole head into one run (inside the caller's write transaction)."""
        ranges = self._head_ranges(conn)
        if not ranges:
            return
        next_id = self._next_id(conn)
        spans: list[tuple[int, int, int, int]] = []
        for p in sorted(ranges):
            first_offset, last_offset = ranges[p]
            length = last_offset - first_offset + 1
            spans.append((p, first_offset, next_id, length))
            next_id += length
        conn.execute('CREATE TEMP TABLE IF NOT EXISTS seal_base ("partition" INTEGER PRIMARY KEY, base INTEGER)')
        conn.execute("DELETE FROM temp.seal_base")
        insert_in_chunks(conn, _SEAL_BASE_INSERT, 2, [x for p, o, i, _ in spans for x in (p, i - o)])
        conn.execute(
            'INSERT INTO messages (id, "partition", "offset", key, value, timestamp) '
            'SELECT b.base + h."offset", h."partition", h."offset", h.key, h.value, h.timestamp '
            'FROM head h JOIN temp.seal_base b ON b."partition" = h."partition" ORDER BY 1'
        )
        insert_in_chunks(conn, _SPAN_INSERT, 4, list(chain.from_iterable(spans)))
        conn.execute("DELETE FROM head")
        conn.execute("DELETE FROM head_marks")
        conn.execute(UPSERT_META, (NEXT_ID_META, str(next_id)))

    def _next_id(self, conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM meta WHERE name = ?", (NEXT_ID_META,)).fetchone()
        return 1 if row is None else int(row[0])

    def _head_ranges(self, conn: sqlite3.Connection) -> dict[int, tuple[int, int]]:
        """Each partition's (first, last) offset ever appended to the head since the last seal,
        from the batches' marks (rows an abort or compaction removed since are holes)."""
        batches = [_unpack(blob) for (blob,) in conn.execute("SELECT offsets FROM head_marks ORDER BY seq")]
        last: dict[int, int] = {}
        for values in batches:  # a newer batch's last offset replaces an older one's
            last.update(zip(values[0::3], values[2::3], strict=True))
        first: dict[int, int] = {}
        for values in reversed(batches):  # an older batch's first offset replaces a newer one's
            first.update(zip(values[0::3], values[1::3], strict=True))
        return {p: (first[p], newest) for p, newest in last.items()}

    def delete_range(self, conn: sqlite3.Connection, partition: int, start: int, end: int) -> int:
        removed = 0
        spans = conn.execute(
            'SELECT first_offset, first_id, length FROM spans WHERE "partition" = ? AND first_offset < ? '
            "AND first_offset + length > ?",
            (partition, end, start),
        ).fetchall()
        for first_offset, first_id, length in spans:
            low = first_id + max(start - first_offset, 0)
            high = first_id + min(end - first_offset, length)
            removed += conn.execute("DELETE FROM messages WHERE id >= ? AND id < ?", (low, high)).rowcount
            if start <= first_offset and first_offset + length <= end:
                conn.execute('DELETE FROM spans WHERE "partition" = ? AND first_offset = ?', (partition, first_offset))
        newest_span = conn.execute(
            'SELECT first_offset + length FROM spans WHERE "partition" = ? ORDER BY first_offset DESC LIMIT 1',
            (partition,),
        ).fetchone()
        if newest_span is None or newest_span[0] < end:  # else the range ends below the head's rows
            removed += conn.execute(
                'DELETE FROM head WHERE "partition" = ? AND "offset" >= ? AND "offset" < ?', (partition, start, end)
            ).rowcount
        return removed

    def delete_offsets(
        self, conn: sqlite3.Connection, partition: int, offsets: list[int], hints: Mapping[int, int] | None = None
    ) -> None:
        """``hints``: offset -> head seq, from a pass scanner (``HeadPassScanner.hints``). Rows in
        the head are then deleted by their seq (the head's rowid) instead of by a scan of the
        whole head; the partition and offset are checked too, so a hint made stale by a seal
        since deletes nothing (and the sealed row is found in its span here)."""
        spans = self._spans(conn, partition)
        ids: list[tuple[int]] = []
        in_head: list[int] = []
        for offset in offsets:
            span = _span_of(spans, offset)
            if span is None:
                in_head.append(offset)
            else:
                ids.append((span[1] + offset - span[0],))
        conn.executemany("DELETE FROM messages WHERE id = ?", ids)
        if not in_head:
            return
        seqs = [hints.get(offset) for offset in in_head] if hints else None
        if seqs is not None and None not in seqs:
            conn.execute(
                'DELETE FROM head WHERE seq IN (SELECT value FROM json_each(?)) AND "partition" = ? '
                'AND "offset" IN (SELECT value FROM json_each(?))',
                ("[" + ",".join(map(str, seqs)) + "]", partition, "[" + ",".join(map(str, in_head)) + "]"),
            )
        else:
            conn.execute(
                'DELETE FROM head WHERE "partition" = ? AND "offset" IN (SELECT value FROM json_each(?))',
                (partition, "[" + ",".join(map(str, in_head)) + "]"),
            )

    def scanner(self, conn: sqlite3.Connection) -> HeadPassScanner:
        return HeadPassScanner(self, conn)

    # -- reads ----------------------------------------------------------------------------------
    def read(
        self, conn: sqlite3.Connection, partition: int, position: int, limit: int, end: int | None = None
    ) -> list[tuple]:
        return self.read_many(conn, [(partition, position, end)], limit)[partition]

    def new_read_state(self) -> HeadReadState:
        return HeadReadState()

    def read_many(
        self,
        conn: sqlite3.Connection,
        requests: Sequence[tuple[int, int, int | None]],
        limit: int,
        state: object | None = None,
    ) -> dict[int, list[tuple]]:
        """Up to ``limit`` rows ``(offset, key, value, timestamp)`` of each ``(partition, position,
        end)`` asked, in one read snapshot: from the spans, then — for every partition that reached
        its newest run — from one scan of the head, from where ``state`` (a HeadReadState the
        caller keeps between calls) says the partitions' rows can be."""
        head_state = state if isinstance(state, HeadReadState) else HeadReadState()
        result: dict[int, list[tuple]] = {}
        wanted: dict[int, list[int | None]] = {}  # partition -> [position, end] of the head's part
        with _snapshot(conn):
            head_state.renew(self._next_id(conn))
            cursors = head_state.cursors
            for partition, position, end in requests:
                cursor = cursors.get(partition)
                if cursor is not None and cursor[0] == position:
                    rows: list[tuple] = []  # read to the head before, and no run written since
                    in_head = True
                else:
                    rows, position, in_head = self._read_runs(conn, partition, position, limit, end)
                result[partition] = rows
                if in_head and len(rows) < limit and (end is None or position < end):
                    wanted[partition] = [position, end]
            if wanted:
                self._read_head(conn, wanted, limit, result, head_state)
        return result

    def _read_runs(
        self, conn: sqlite3.Connection, partition: int, position: int, limit: int, end: int | None
    ) -> tuple[list[tuple], int, bool]:
        """Rows from the spans: (rows, the position after them, whether the head comes next)."""
        rows: list[tuple] = []
        span = conn.execute(_SPAN_AT, (partition, position)).fetchone()
        if span is None or position >= span[0] + span[2]:
            span = conn.execute(_SPAN_FROM, (partition, position)).fetchone()
        while len(rows) < limit and (end is None or position < end):
            if span is None:
                return rows, position, True
            first_offset, first_id, length = span
            position = max(position, first_offset)  # nothing of the partition lies between
            span_end = first_offset + length
            high = span_end if end is None else min(span_end, end)
            if position >= high:
                break
            want = limit - len(rows)
            got = conn.execute(
                _READ_RUN, (first_id + position - first_offset, first_id + high - first_offset, want)
            ).fetchall()
            rows += got
            if len(got) == want:
                return rows, got[-1][0] + 1, False
            position = high  # read to high: the span's end, or the bound
            if high == span_end:
                span = conn.execute(_SPAN_FROM, (partition, position)).fetchone()
        return rows, position, False

    def _read_head(
        self,
        conn: sqlite3.Connection,
        wanted: dict[int, list[int | None]],
        limit: int,
        result: dict[int, list[tuple]],
        state: HeadReadState,
    ) -> None:
        """One scan of the head in arrival order for every partition in ``wanted`` (partition ->
        [position, end]), from the smallest seq the state allows."""
        state.refresh_marks(conn)
        starts: dict[int, int] = {}
        for p, (position, _end) in wanted.items():
            start_seq = state.start_of(p, position)  # type: ignore[arg-type]
            if start_seq is not None:
                starts[p] = start_seq
            else:  # nothing of it in the head at or past its position yet
                (newest,) = conn.execute("SELECT MAX(seq) FROM head").fetchone()
                state.cursors[p] = (position, newest or 0)  # type: ignore[assignment]
        if not starts:
            return
        # rows of partitions not asked for are skipped inside SQLite (an ephemeral index of the
        # list): they never become Python objects
        partitions = "[" + ",".join(map(str, starts)) + "]"
        open_ = {p: (wanted[p][0], wanted[p][1], result[p]) for p in starts}
        stopped: dict[int, int] = {}  # partition -> the seq its part of the scan ended at
        seq = min(starts.values())
        execute, get, lasts = conn.execute, open_.get, state.last_offsets
        while open_:
            # as many rows as the open partitions still take: a longer chunk would make SQLite
            # walk the head past where every one of them is served
            size = min(_HEAD_CHUNK, max(sum(limit - len(asked[2]) for asked in open_.values()), 16))
            chunk = execute(_READ_HEAD, (seq, partitions, size)).fetchall()
            for seq, p, offset, key, value, timestamp in chunk:
                asked = get(p)
                if asked is None or offset < asked[0]:  # type: ignore[operator]
                    continue
                end, rows = asked[1], asked[2]
                if end is not None and offset >= end:
                    del open_[p]  # bounded below end: nothing more to read until end moves,
                    stopped[p] = seq - 1  # and then from this row on
                    continue
                rows.append((offset, key, value, timestamp))
                if len(rows) >= limit or offset >= lasts.get(p, offset + 1):
                    del open_[p]  # full, or its newest row in the head as the marks say
                    stopped[p] = seq
            if len(chunk) < size:
                break
        for p in starts:
            rows = result[p]
            after: int = rows[-1][0] + 1 if rows else wanted[p][0]  # type: ignore[assignment]
            state.cursors[p] = (after, stopped.get(p, seq))

    def next_offsets(self, conn: sqlite3.Connection, partitions: Iterable[int]) -> dict[int, int]:
        """The larger of: the recorded floor, the end of the partition's newest span, one past
        its newest head offset (from the marks: no scan of the head)."""
        partitions = list(partitions)
        floors = self.recorded_next_offsets(conn, partitions)
        head = self._head_last_offsets(conn, set(partitions))
        result = {}
        for p in partitions:
            span = conn.execute(
                'SELECT first_offset + length FROM spans WHERE "partition" = ? ORDER BY first_offset DESC LIMIT 1',
                (p,),
            ).fetchone()
            candidates = [floors.get(p, 0), 0 if span is None else span[0]]
            if p in head:
                candidates.append(head[p] + 1)
            result[p] = max(candidates)
        return result

    def _head_last_offsets(self, conn: sqlite3.Connection, partitions: set[int]) -> dict[int, int]:
        """The newest head offset of each of ``partitions`` that has one: marks read newest first,
        until every one is found — a producer asks for the partitions of its batch, which recent
        marks hold, so a head of many small batches is not decoded whole for each write."""
        found: dict[int, int] = {}
        for (blob,) in conn.execute("SELECT offsets FROM head_marks ORDER BY seq DESC"):
            values = _unpack(blob)
            batch = dict(zip(values[0::3], values[2::3], strict=True))
            found.update((p, batch[p]) for p in partitions.intersection(batch) if p not in found)
            if len(found) == len(partitions):
                break
        return found

    def last_offset(self, conn: sqlite3.Connection, partition: int) -> int | None:
        with _snapshot(conn):
            ((_, _, newest),) = self.bounds_of(conn, [partition])
        return newest

    def bounds(self, conn: sqlite3.Connection, partition_count: int) -> Iterator[tuple[int, int | None, int | None]]:
        return self.bounds_of(conn, list(range(partition_count)))

    def bounds_of(
        self, conn: sqlite3.Connection, partitions: list[int]
    ) -> Iterator[tuple[int, int | None, int | None]]:
        """(partition, oldest, newest) of the rows still held: the head's in one grouped scan,
        the runs' by the first and last non-empty span of each partition."""
        head = {
            p: (low, high)
            for p, low, high in conn.execute('SELECT "partition", MIN("offset"), MAX("offset") FROM head GROUP BY 1')
        }
        rows = []
        for p in partitions:
            spans = self._spans(conn, p)
            oldest = self._edge(conn, spans, "MIN")
            newest = self._edge(conn, reversed(spans), "MAX")
            if p in head:
                oldest = head[p][0] if oldest is None else oldest
                newest = head[p][1]
            rows.append((p, oldest, newest))
        return iter(rows)

    def _edge(self, conn: sqlite3.Connection, spans: Iterable[tuple[int, int, int]], how: str) -> int | None:
        for first_offset, first_id, length in spans:
            (found,) = conn.execute(
                f"SELECT {how}(id) FROM messages WHERE id >= ? AND id < ?", (first_id, first_id + length)
            ).fetchone()
            if found is not None:
                return first_offset + found - first_id
        return None

    def _spans(self, conn: sqlite3.Connection, partition: int) -> list[tuple[int, int, int]]:
        return conn.execute(
            'SELECT first_offset, first_id, length FROM spans WHERE "partition" = ? ORDER BY first_offset', (partition,)
        ).fetchall()

    def scan(self, conn: sqlite3.Connection, partition: int, descending: bool = False) -> sqlite3.Cursor:
        order = "DESC" if descending else "ASC"
        columns = f'"offset", key, value IS NULL, {SIZE_SQL}, timestamp'

        def head() -> sqlite3.Cursor:  # run only when reached: it scans the whole head
            return conn.execute(f'SELECT {columns} FROM head WHERE "partition" = ? ORDER BY seq {order}', (partition,))

        def statements() -> Iterator[sqlite3.Cursor]:
            spans = self._spans(conn, partition)
            if descending:
                yield head()
            for _, first_id, length in reversed(spans) if descending else spans:
                yield conn.execute(
                    f"SELECT {columns} FROM messages WHERE id >= ? AND id < ? ORDER BY id {order}",
                    (first_id, first_id + length),
                )
            if not descending:
                yield head()

        return _ChainedCursor(conn, statements())  # type: ignore[return-value]


def _head_seqs(conn: sqlite3.Connection) -> tuple[int, int]:
    """The head's first and last seq; (0, -1) when it is empty (no rows between them)."""
    # (two subqueries: SQLite seeks for a lone MIN or MAX, but scans for both in one SELECT)
    first, last = conn.execute("SELECT (SELECT MIN(seq) FROM head), (SELECT MAX(seq) FROM head)").fetchone()
    return (0, -1) if first is None else (first, last)


def _span_of(spans: list[tuple[int, int, int]], offset: int) -> tuple[int, int, int] | None:
    """The span (first_offset, first_id, length) holding ``offset``, from a partition's spans in
    offset order; None when it is past them (in the head)."""
    i = bisect_right(spans, offset, key=itemgetter(0)) - 1
    if i < 0:
        return None
    span = spans[i]
    return span if offset < span[0] + span[2] else None
