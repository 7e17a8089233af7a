"""Candidate table layouts for the embedded log's next format, in plain sqlite3, at 4 and 1,024 partitions.

    python -m bench.bench_log_layouts [--messages N] [--seal-rows R] [--repetitions K]

Groundwork for log format 3 (docs/decisions.md, "Log format 3: the layouts measured"): today's
format 2 keeps each partition's rows contiguous, so a producer batch spread over 1,024 partitions
dirties about one b-tree leaf page per row, and SQLite's WAL writes every dirty page whole at each
commit. Each layout here takes the same rows (100-byte values, round robin over P partitions) in
transactions of ``log.batch.size`` rows (1,000) with WAL and ``synchronous=FULL``, as the log
producer writes them, then reads them back the way a consumer would, partition by partition in
fetches of 250 (``arrival`` reads in arrival order: it has no per-partition access at all).

* ``format2`` — the current layout: rowid ``partition << 40 | offset``.
* ``arrival+index`` — rows in arrival order (rowid = append sequence) and a UNIQUE index on
  (partition, offset) that reads go through.
* ``arrival`` — rows in arrival order, no index: the floor of any append-only layout.
* ``head+seal`` — writes go to an arrival-ordered head table (with a (partition, offset) index
  for reads of the tail); every ``--seal-rows`` rows one transaction moves the head into the
  format-2 table in partition order (an LSM's flush). Reads are not measured: they would read the
  format-2 table, then the head.
* ``head+seal, no index`` — as above without the head's index (readers would scan the head).
* ``head+runs`` — ``head+seal``'s head, sealed every ``--seal-rows`` rows into a run at the
  b-tree's right edge with a span directory (``runs+merge``'s reads), never merged again;
  ``no index``: the head without its (partition, offset) index (tail readers would scan it);
  ``narrow direct``: a batch with ≥ 16 rows per partition it touches is written as a run at once.
* ``runs+merge`` — every batch a run sorted by (partition, offset) appended at the b-tree's right
  edge, with a span directory; every ``--seal-rows`` rows the new runs merged into one (an LSM's
  compaction). Reads go partition by partition through the spans.

Every measurement runs in this one process, layouts in turn, so the figures compare with each
other only; the ratio column (1,024 over 4 partitions, by CPU time) is what issue 38's target (≥ 0.8)
is about, and the read columns say what a layout costs readers (format 2's read rate must not drop).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from operator import itemgetter

from samza_dagster.system.log.config import DEFAULT_BATCH_SIZE

Row = tuple[int, int, bytes | None, bytes, int]
Insert = Callable[[list[Row]], None]
VALUE = b"x" * 100
FETCH = 250
WIDTHS = (4, 1024)
_TABLE = "(seq INTEGER PRIMARY KEY, p INTEGER, o INTEGER, k BLOB, v BLOB, t INTEGER)"
_FORMAT2 = "CREATE TABLE m (id INTEGER PRIMARY KEY, p INTEGER, o INTEGER, k BLOB, v BLOB, t INTEGER)"


def _format2(conn: sqlite3.Connection, _seal_rows: int) -> Insert:
    conn.execute(_FORMAT2)

    def insert(rows: list[Row]) -> None:
        conn.executemany("INSERT INTO m VALUES (?,?,?,?,?,?)", [(p << 40 | o, p, o, k, v, t) for p, o, k, v, t in rows])

    return insert


def _arrival(indexed: bool) -> Callable[[sqlite3.Connection, int], Insert]:
    def layout(conn: sqlite3.Connection, _seal_rows: int) -> Insert:
        conn.execute("CREATE TABLE m " + _TABLE)
        if indexed:
            conn.execute("CREATE UNIQUE INDEX m_partition_offset ON m (p, o)")

        def insert(rows: list[Row]) -> None:
            conn.executemany("INSERT INTO m (p, o, k, v, t) VALUES (?,?,?,?,?)", rows)

        return insert

    return layout


def _head_and_seal(indexed: bool) -> Callable[[sqlite3.Connection, int], Insert]:
    def layout(conn: sqlite3.Connection, seal_rows: int) -> Insert:
        conn.execute(_FORMAT2)
        conn.execute("CREATE TABLE h " + _TABLE)
        if indexed:
            conn.execute("CREATE UNIQUE INDEX h_partition_offset ON h (p, o)")
        unsealed = [0]

        def insert(rows: list[Row]) -> None:
            conn.executemany("INSERT INTO h (p, o, k, v, t) VALUES (?,?,?,?,?)", rows)
            unsealed[0] += len(rows)
            if unsealed[0] >= seal_rows:  # inside the caller's transaction, as a producer would
                conn.execute("INSERT INTO m SELECT (p << 40) | o, p, o, k, v, t FROM h ORDER BY p, o")
                conn.execute("DELETE FROM h")
                unsealed[0] = 0

        return insert

    return layout


_SPAN = "CREATE TABLE span (first_id INTEGER PRIMARY KEY, p INTEGER, first_o INTEGER, n INTEGER)"


def _runs_and_merge(conn: sqlite3.Connection, merge_rows: int) -> Insert:
    """Each batch is written as a *run*: its rows sorted by (partition, offset) and given the next
    rowids, so the insert only ever touches the b-tree's right edge, plus one ``span`` row per
    partition in it (where that partition's rows of the run start, and how many) — also appended
    in rowid order. Every ``merge_rows`` rows the runs written since are merged into one (an LSM's
    compaction: rows re-appended in (partition, offset) order, the old ids and spans deleted as
    one contiguous range), so a partition's rows come in spans of ``merge_rows / P`` rows."""
    conn.execute(_FORMAT2)
    conn.execute(_SPAN)
    state = {"next_id": 1, "merge_from": 1}

    def write_run(rows: list[tuple[int, int, bytes | None, bytes, int]]) -> None:
        first = state["next_id"]
        conn.executemany("INSERT INTO m VALUES (?,?,?,?,?,?)", [(first + i, *row) for i, row in enumerate(rows)])
        spans: list[tuple[int, int, int, int]] = []
        for i, (p, o, *_rest) in enumerate(rows):
            if spans and spans[-1][1] == p:
                first_id, _, first_o, n = spans[-1]
                spans[-1] = (first_id, p, first_o, n + 1)
            else:
                spans.append((first + i, p, o, 1))
        conn.executemany("INSERT INTO span VALUES (?,?,?,?)", spans)
        state["next_id"] = first + len(rows)

    def insert(rows: list[Row]) -> None:
        write_run(sorted(rows, key=lambda r: (r[0], r[1])))
        if state["next_id"] - state["merge_from"] >= merge_rows:
            low, high = state["merge_from"], state["next_id"]
            # the merge in SQL alone: rows re-appended in (partition, offset) order after the last
            # id, spans recomputed from them, then the merged range and its spans deleted
            conn.execute(
                "INSERT INTO m SELECT ? + row_number() OVER (ORDER BY p, o) - 1, p, o, k, v, t"
                " FROM m WHERE id >= ? AND id < ?",
                (high, low, high),
            )
            conn.execute(
                "INSERT INTO span SELECT min(id), p, min(o), count(*) FROM m WHERE id >= ? GROUP BY p", (high,)
            )
            conn.execute("DELETE FROM m WHERE id >= ? AND id < ?", (low, high))
            conn.execute("DELETE FROM span WHERE first_id >= ? AND first_id < ?", (low, high))
            state["next_id"] = high + (high - low)
            state["merge_from"] = state["next_id"]

    return insert


def _head_and_runs(indexed: bool, direct_rows_per_partition: int | None) -> Callable[[sqlite3.Connection, int], Insert]:
    def layout(conn: sqlite3.Connection, seal_rows: int) -> Insert:
        return _head_and_runs_layout(conn, seal_rows, indexed, direct_rows_per_partition)

    return layout


def _head_and_runs_layout(
    conn: sqlite3.Connection, seal_rows: int, indexed: bool, direct_rows_per_partition: int | None
) -> Insert:
    """Writes go to an arrival-ordered head (with a (partition, offset) index when ``indexed``, as
    ``head+seal``'s); every ``seal_rows`` rows one statement moves the head into a *run* appended at
    the b-tree's right edge in (partition, offset) order, with one ``span`` row per partition
    (``runs+merge``'s directory, written once per seal instead of once per batch). Sealed rows are
    never rewritten, and every insert but the head index's lands at a right edge. The spans come
    from counts kept as rows arrive (a producer knows each partition's offsets), not from a scan.
    With ``direct_rows_per_partition`` a batch holding at least that many rows per partition it
    touches skips the head: it is a run of its own at once (its spans are few and long), so narrow
    producers write each row once."""
    conn.execute(_FORMAT2)
    conn.execute(_SPAN)
    conn.execute("CREATE TABLE h " + _TABLE)
    if indexed:
        conn.execute("CREATE UNIQUE INDEX h_partition_offset ON h (p, o)")
    state = {"next_id": 1, "unsealed": 0}
    counts: Counter[int] = Counter()  # rows of each partition in the head
    last: dict[int, int] = {}  # each partition's last offset in the head

    def write_spans(first_id: int, spans: Counter[int], last_offsets: dict[int, int]) -> int:
        rows, next_id = [], first_id
        for p in sorted(spans):
            rows.append((next_id, p, last_offsets[p] - spans[p] + 1, spans[p]))
            next_id += spans[p]
        conn.executemany("INSERT INTO span VALUES (?,?,?,?)", rows)
        return next_id

    def seal() -> None:
        # m's id is its rowid: rows inserted without one go to the right edge, in this order
        conn.execute("INSERT INTO m (p, o, k, v, t) SELECT p, o, k, v, t FROM h ORDER BY p, o")
        state["next_id"] = write_spans(state["next_id"], counts, last)
        conn.execute("DELETE FROM h")
        state["unsealed"] = 0
        counts.clear()
        last.clear()

    def add(rows: list[Row], into: Counter[int], last_offsets: dict[int, int]) -> None:
        into.update(map(itemgetter(0), rows))
        last_offsets.update(map(itemgetter(0, 1), rows))

    def insert(rows: list[Row]) -> None:
        if direct_rows_per_partition and len(rows) >= direct_rows_per_partition * len({r[0] for r in rows}):
            run_counts: Counter[int] = Counter()
            run_last: dict[int, int] = {}
            add(rows, run_counts, run_last)
            conn.executemany("INSERT INTO m (p, o, k, v, t) VALUES (?,?,?,?,?)", sorted(rows, key=itemgetter(0, 1)))
            state["next_id"] = write_spans(state["next_id"], run_counts, run_last)
            return
        conn.executemany("INSERT INTO h (p, o, k, v, t) VALUES (?,?,?,?,?)", rows)
        add(rows, counts, last)
        state["unsealed"] += len(rows)
        if state["unsealed"] >= seal_rows:  # inside the caller's transaction, as a producer would
            seal()

    insert.seal = seal  # type: ignore[attr-defined]  # the reads seal what is left first
    return insert


LAYOUTS: dict[str, Callable[[sqlite3.Connection, int], Insert]] = {
    "format2": _format2,
    "arrival+index": _arrival(indexed=True),
    "arrival": _arrival(indexed=False),
    "head+seal": _head_and_seal(indexed=True),
    "head+seal, no index": _head_and_seal(indexed=False),
    "runs+merge": _runs_and_merge,
    "head+runs": _head_and_runs(indexed=True, direct_rows_per_partition=None),
    "head+runs, narrow direct": _head_and_runs(indexed=True, direct_rows_per_partition=16),
    "head+runs, no index": _head_and_runs(indexed=False, direct_rows_per_partition=None),
    "head+runs, no index, narrow direct": _head_and_runs(indexed=False, direct_rows_per_partition=16),
}


def _batches(messages: int, partitions: int) -> Iterator[list[Row]]:
    next_offset = [0] * partitions
    for start in range(0, messages, DEFAULT_BATCH_SIZE):
        rows: list[Row] = []
        for i in range(start, min(messages, start + DEFAULT_BATCH_SIZE)):
            p = i % partitions
            rows.append((p, next_offset[p], None, VALUE, 0))
            next_offset[p] += 1
        yield rows


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _read_per_cpu_second(conn: sqlite3.Connection, layout: str, partitions: int, messages: int) -> float | None:
    """Rows per CPU second read back in fetches of ``FETCH``, round robin over the partitions."""
    if layout == "arrival":
        sql, position, total, start = "SELECT seq, k, v, t FROM m WHERE seq > ? ORDER BY seq LIMIT ?", 0, 0, _cpu()
        while rows := conn.execute(sql, (position, FETCH)).fetchall():
            total, position = total + len(rows), rows[-1][0]
    elif layout in ("format2", "arrival+index"):
        if layout == "format2":
            sql = "SELECT o, k, v, t FROM m WHERE id >= ? AND id < ? ORDER BY id LIMIT ?"
            args: Callable[[int, int], tuple] = lambda p, o: ((p << 40) + o, (p + 1) << 40, FETCH)  # noqa: E731
        else:
            sql = "SELECT o, k, v, t FROM m WHERE p = ? AND o >= ? ORDER BY o LIMIT ?"
            args = lambda p, o: (p, o, FETCH)  # noqa: E731
        positions, active, total, start = [0] * partitions, list(range(partitions)), 0, _cpu()
        while active:
            still = []
            for p in active:
                if rows := conn.execute(sql, args(p, positions[p])).fetchall():
                    total, positions[p] = total + len(rows), rows[-1][0] + 1
                    still.append(p)
            active = still
    elif layout == "runs+merge" or layout.startswith("head+runs"):
        start = _cpu()
        total = _read_runs(conn, partitions)
    else:
        return None
    if total != messages:
        raise RuntimeError(f"{layout}: read {total} of {messages} rows")
    return messages / (_cpu() - start)


def _read_runs(conn: sqlite3.Connection, partitions: int) -> int:
    """``runs+merge``'s reads: every span loaded once (a consumer would keep them and read new ones
    by rowid), then fetches of ``FETCH`` per partition, round robin, each a rowid range scan that
    continues into the partition's next span when one ends."""
    spans: list[list[tuple[int, int]]] = [[] for _ in range(partitions)]  # (first_id, n) by offset
    for first_id, p, n in conn.execute("SELECT first_id, p, n FROM span ORDER BY p, first_o"):
        spans[p].append((first_id, n))
    # format 2's query: a span's rows have consecutive ids, so where a fetch ends is arithmetic
    sql = "SELECT o, k, v, t FROM m WHERE id >= ? AND id < ? ORDER BY id LIMIT ?"
    cursor = [(0, spans[p][0][0]) if spans[p] else (0, 0) for p in range(partitions)]  # span index, next id
    active, total = [p for p in range(partitions) if spans[p]], 0
    while active:
        still = []
        for p in active:
            index, next_id = cursor[p]
            fetched = 0
            while fetched < FETCH and index < len(spans[p]):
                first_id, n = spans[p][index]
                rows = conn.execute(sql, (next_id, first_id + n, FETCH - fetched)).fetchall()
                fetched += len(rows)
                next_id = next_id + len(rows) if rows else first_id + n
                if next_id >= first_id + n:
                    index += 1
                    next_id = spans[p][index][0] if index < len(spans[p]) else next_id
            total += fetched
            cursor[p] = (index, next_id)
            if index < len(spans[p]):
                still.append(p)
        active = still
    return total


def measure(layout: str, partitions: int, messages: int, seal_rows: int) -> tuple[float, float, float | None]:
    """(msgs/s, msgs per CPU second) of the appends, and read rows per CPU second."""
    root = tempfile.mkdtemp(prefix="log-layout-")
    try:
        conn = sqlite3.connect(os.path.join(root, "stream.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        insert = LAYOUTS[layout](conn, seal_rows)
        batches = list(_batches(messages, partitions))
        cpu0, t0 = _cpu(), time.perf_counter()
        for rows in batches:
            conn.execute("BEGIN IMMEDIATE")
            insert(rows)
            conn.execute("COMMIT")
        elapsed, cpu = time.perf_counter() - t0, _cpu() - cpu0
        if hasattr(insert, "seal"):  # the head's last rows, untimed as head+seal leaves them unsealed
            conn.execute("BEGIN IMMEDIATE")
            insert.seal()
            conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        read = _read_per_cpu_second(conn, layout, partitions, messages)
        conn.close()
        return messages / elapsed, messages / cpu, read
    finally:
        shutil.rmtree(root, ignore_errors=True)


def tail_scan(partitions: int, rows: int, owned_one_in: int) -> tuple[float, float]:
    """The tail read ``head+runs, no index`` needs: a consumer scans the unsealed head once in
    arrival order for every partition it owns (``p IN (...)`` when it owns one in
    ``owned_one_in``), instead of one query per partition. (owned rows, head rows) per CPU second."""
    root = tempfile.mkdtemp(prefix="log-layout-")
    try:
        conn = sqlite3.connect(os.path.join(root, "stream.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        insert = LAYOUTS["head+runs, no index"](conn, rows + 1)  # nothing sealed
        for batch in _batches(rows, partitions):
            conn.execute("BEGIN IMMEDIATE")
            insert(batch)
            conn.execute("COMMIT")
        owned = ",".join(str(p) for p in range(0, partitions, owned_one_in))
        where = "" if owned_one_in == 1 else f" AND p IN ({owned})"
        sql = f"SELECT seq, p, o, k, v, t FROM h WHERE seq > ?{where} ORDER BY seq LIMIT {DEFAULT_BATCH_SIZE}"
        position, total, start = 0, 0, _cpu()
        while fetched := conn.execute(sql, (position,)).fetchall():
            total, position = total + len(fetched), fetched[-1][0]
        cpu = _cpu() - start
        conn.close()
        return total / cpu, rows / cpu
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument(
        "--seal-rows", type=int, default=128_000, help="rows per head+seal move and per runs+merge merge"
    )
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args(argv)
    print(
        f"{args.messages:,} rows of 100 bytes, transactions of {DEFAULT_BATCH_SIZE:,}, WAL, synchronous=FULL; "
        f"median of {args.repetitions}; SQLite {sqlite3.sqlite_version}\n"
    )
    print("| layout | append msgs/CPU-s at 4 | at 1,024 | 1,024 / 4 | read rows/CPU-s at 4 | at 1,024 |")
    print("|---|---:|---:|---:|---:|---:|")
    for layout in LAYOUTS:
        runs = {p: [measure(layout, p, args.messages, args.seal_rows) for _ in range(args.repetitions)] for p in WIDTHS}
        cpu = {p: statistics.median(r[1] for r in runs[p]) for p in WIDTHS}
        reads = {p: [r[2] for r in runs[p] if r[2] is not None] for p in WIDTHS}
        read = [f"{statistics.median(reads[p]):,.0f}" if reads[p] else "—" for p in WIDTHS]
        print(f"| {layout} | {cpu[4]:,.0f} | {cpu[1024]:,.0f} | {cpu[1024] / cpu[4]:.2f} | {read[0]} | {read[1]} |")
    head_rows = args.seal_rows - 1
    print(f"\nTail reads of an unsealed head of {head_rows:,} rows over 1,024 partitions (head+runs, no index):\n")
    print("| the consumer owns | owned rows/CPU-s | head rows scanned/CPU-s |")
    print("|---|---:|---:|")
    for one_in in (1, 4, 16):
        scans = [tail_scan(1024, head_rows, one_in) for _ in range(args.repetitions)]
        owned_rate = statistics.median(s[0] for s in scans)
        head_rate = statistics.median(s[1] for s in scans)
        print(f"| {'all' if one_in == 1 else f'1 in {one_in}'} | {owned_rate:,.0f} | {head_rate:,.0f} |")


if __name__ == "__main__":
    main()
