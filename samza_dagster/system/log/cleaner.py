"""Retention and compaction of log stream files, applied by the log itself.

There is no broker: every LogSystemProducer owns a LogCleaner thread that, at most every
``systems.<s>.log.cleaner.interval.ms`` (the first time one interval after its first write) and
only after the producer wrote to a stream, cleans the
partitions of that stream this producer has written to (each process cleans what it writes, so a
changelog partition whose task is down is left as its task left it; see docs/decisions.md).

A pass reads the stream's policy from the file (retention.py) and, per partition:

* **delete** — removes the oldest messages while they are older than ``retention.ms`` (by
  message timestamp, stopping at the first younger one) and while the partition holds more than
  ``retention.bytes`` of keys and values. The partition's start moves up; nothing in the middle.
* **compact** — in the *cleanable section* (from the oldest message up to the first one younger
  than ``min.compaction.lag.ms``) removes every keyed message that a newer message of the same key
  supersedes (never past the first message of an open transaction: transactions.py), and a newest-of-its-key tombstone older than ``delete.retention.ms``. Messages with
  no key are kept. Offsets are kept: compaction leaves gaps, which range reads step over.

A pass has two steps. First it decides what goes, for every partition, in one read snapshot
(WAL: it blocks no one) through the format's pass scanner, which reads rows that partitions share
once for all of them (format 3's head: runs_format.py; scanned once per partition before, a pass
over 1,024 partitions cost ~1 CPU s even when it removed nothing). Then it deletes, partition by
partition, in transactions of at most ``CHUNK`` messages each (deciding from a snapshot is safe:
a message superseded or expired then still is; one a seal has moved since is found where it now
is), so a producer's batch waits for one short transaction at most and a
reader sees each chunk whole or not at all. Each deleting transaction first records the
partition's next offset in ``meta`` (formats.NEXT_OFFSET_META): an emptied partition goes on
where it was. Freed pages go back to the file system by ``PRAGMA incremental_vacuum`` in steps,
in files created with ``auto_vacuum=INCREMENTAL`` (storage.py: streams created with a policy that
removes messages); other files reuse them for new messages instead.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial

from samza_dagster.system.log import storage, transactions
from samza_dagster.system.log.file_worker import StreamFileWorker
from samza_dagster.system.log.format_base import PassScanner
from samza_dagster.system.log.formats import LogFormat
from samza_dagster.system.log.retention import CleanupPolicy

#: messages removed per transaction
CHUNK = 5000
#: pages returned to the file system per incremental_vacuum transaction
VACUUM_PAGES = 2048
#: the cleaner's connection truncates the WAL back to this size after checkpoints (a large
#: deletion would otherwise leave a WAL file as large as everything it deleted)
WAL_SIZE_LIMIT = 64 * 1024 * 1024

log = logging.getLogger(__name__)


@dataclass
class CleanStats:
    """What one pass over one stream did."""

    deleted: int = 0
    #: pages given back to the file system
    vacuumed_pages: int = 0


def read_policy(conn: sqlite3.Connection, stream: str) -> CleanupPolicy:
    """The policy stored in the stream file's ``property.*`` meta rows."""
    rows = conn.execute("SELECT name, value FROM meta WHERE name >= 'property.' AND name < 'property/'")
    properties = {name[len("property.") :]: value for name, value in rows}
    return CleanupPolicy.from_properties(properties, f"stream {stream!r} (stored property) ")


def clean_stream(
    conn: storage.StreamConnection,
    partitions: Iterable[int],
    policy: CleanupPolicy,
    now_ms: int | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> CleanStats:
    """One cleaning pass over ``partitions`` of the stream behind ``conn``."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    stats = CleanStats()
    fmt = conn.log_format
    partitions = sorted(partitions)
    # what goes, from one read snapshot: (partition, its first offset, the retention cut, the
    # offsets compaction removes)
    plans: list[tuple[int, int | None, int | None, list[int]]] = []
    conn.execute("BEGIN")
    try:
        scanner = fmt.scanner(conn)
        stable = transactions.stable_ends(conn, fmt, partitions) if policy.compact else {}
        for partition in partitions:
            if stopping():
                break
            first = cut = None
            compactable: list[int] = []
            if policy.delete:
                cut = _retention_cut(conn, scanner, fmt, partition, policy, now)
                if cut is not None:
                    first = _first_offset(scanner, partition)
            if policy.compact:
                compactable = _compactable(scanner, partition, policy, now, stable[partition])
                if cut is not None:
                    compactable = [offset for offset in compactable if offset >= cut]  # retention takes those
            plans.append((partition, first, cut, compactable))
    finally:
        conn.execute("COMMIT")
    for partition, first, cut, compactable in plans:
        if stopping():
            break
        if first is not None and cut is not None:
            stats.deleted += _delete_prefix(conn, fmt, partition, first, cut, stopping)
        if compactable:
            stats.deleted += _delete_offsets(conn, fmt, partition, compactable, stopping, scanner.hints(partition))
    if stats.deleted and not stopping():
        stats.vacuumed_pages = _vacuum(conn, stopping)
    return stats


def _first_offset(scanner: PassScanner, partition: int) -> int | None:
    cursor = scanner.scan(partition)
    try:
        first = cursor.fetchone()
    finally:
        cursor.close()
    return None if first is None else first[0]


def _retention_cut(
    conn: sqlite3.Connection, scanner: PassScanner, fmt: LogFormat, partition: int, policy: CleanupPolicy, now: int
) -> int | None:
    """The first offset retention keeps (everything before it goes), or None: nothing to delete."""
    cut: int | None = None
    if policy.retention_ms >= 0:
        horizon = now - policy.retention_ms
        cursor = scanner.scan(partition)
        try:
            first = True
            for offset, _key, _tombstone, _size, timestamp in cursor:
                if timestamp >= horizon:
                    cut = None if first else offset
                    break
                first = False
            else:
                cut = None if first else fmt.next_offset(conn, partition)  # every message expired
        finally:
            cursor.close()
    if policy.retention_bytes >= 0:
        total = 0
        cursor = scanner.scan(partition, descending=True)
        try:
            for offset, _key, _tombstone, size, _timestamp in cursor:
                total += size
                if total > policy.retention_bytes:
                    cut = max(cut or 0, offset + 1)
                    break
        finally:
            cursor.close()
    return cut


def _compactable(scanner: PassScanner, partition: int, policy: CleanupPolicy, now: int, stable_end: int) -> list[int]:
    """Offsets compaction removes: superseded keyed messages and expired newest tombstones, below
    ``stable_end`` (the first offset of an open transaction, which may still be aborted: Kafka's
    cleaner stops at the last stable offset too)."""
    lag_horizon = now - policy.min_compaction_lag_ms
    tombstone_horizon = now - policy.delete_retention_ms
    newest: dict[bytes, int] = {}
    tombstones: dict[bytes, tuple[int, int]] = {}  # key -> (offset, timestamp) of a newest tombstone
    removable: list[int] = []
    cursor = scanner.scan(partition)
    try:
        for offset, key, tombstone, _size, timestamp in cursor:
            if timestamp > lag_horizon or offset >= stable_end:
                break  # the end of the cleanable section
            if key is None:
                continue
            previous = newest.get(key)
            if previous is not None:
                removable.append(previous)
            newest[key] = offset
            if tombstone:
                tombstones[key] = (offset, timestamp)
            elif previous is not None:
                tombstones.pop(key, None)
    finally:
        cursor.close()
    removable.extend(offset for offset, timestamp in tombstones.values() if timestamp < tombstone_horizon)
    removable.sort()
    return removable


def _in_transaction(conn: storage.StreamConnection, fmt: LogFormat, partition: int, delete: Callable[[], int]) -> int:
    """Run ``delete`` in its own write transaction, after recording the partition's next offset."""
    with storage.write_transaction(conn):
        fmt.record_next_offset(conn, partition)
        return delete()


def _delete_prefix(
    conn: storage.StreamConnection,
    fmt: LogFormat,
    partition: int,
    first: int,
    cut: int,
    stopping: Callable[[], bool],
) -> int:
    """Remove the partition's messages from ``first`` (its oldest, as the pass saw it) up to ``cut``."""
    removed, start = 0, first
    while start < cut and not stopping():
        end = min(start + CHUNK, cut)
        removed += _in_transaction(conn, fmt, partition, partial(fmt.delete_range, conn, partition, start, end))
        start = end
    return removed


def _delete_offsets(
    conn: storage.StreamConnection,
    fmt: LogFormat,
    partition: int,
    offsets: list[int],
    stopping: Callable[[], bool],
    hints: Mapping[int, int] | None = None,
) -> int:
    removed = 0
    for i in range(0, len(offsets), CHUNK):
        if stopping():
            break
        chunk = offsets[i : i + CHUNK]

        def delete(chunk: list[int] = chunk) -> int:
            fmt.delete_offsets(conn, partition, chunk, hints)
            return len(chunk)

        removed += _in_transaction(conn, fmt, partition, delete)
    return removed


def _vacuum(conn: sqlite3.Connection, stopping: Callable[[], bool]) -> int:
    """Give free pages back in steps of VACUUM_PAGES (one short transaction each)."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:  # 2: INCREMENTAL
        return 0
    vacuumed = 0
    while not stopping():
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        if free == 0:
            break
        # executescript steps the pragma to completion; execute() would free one page per call
        conn.executescript(f"PRAGMA incremental_vacuum({VACUUM_PAGES});")
        vacuumed += min(free, VACUUM_PAGES)
    return vacuumed


class LogCleaner(StreamFileWorker):
    """The cleaning thread of one producer. ``note_write`` (after each committed batch) marks a
    stream pending; the thread cleans a pending stream once ``interval_s`` has passed since its
    last pass (or since the producer's first write to it)."""

    def __init__(self, system: str, root: str, synchronous: str, busy_timeout_s: float, interval_s: float) -> None:
        super().__init__("log-cleaner", system, root, synchronous, busy_timeout_s)
        self._interval_s = interval_s
        self._written: dict[str, set[int]] = {}  # stream -> partitions this producer wrote
        self._pending: set[str] = set()
        self._last: dict[str, float] = {}
        self._skip: set[str] = set()  # streams whose policy never removes anything
        #: stream -> stats of its last pass (for tests and benchmarks)
        self.passes: dict[str, CleanStats] = {}
        self.pass_count = 0

    def watch(self, stream: str, conn: sqlite3.Connection) -> None:
        """Called when the producer opens ``stream``: a stream whose stored policy never removes
        anything is never cleaned (and starts no thread)."""
        try:
            if not read_policy(conn, stream).cleans:
                self._skip.add(stream)
        except ValueError as exc:
            log.warning("log cleaner: stream %r is not cleaned: its stored cleanup policy is bad (%s)", stream, exc)
            self._skip.add(stream)

    def note_write(self, stream: str, partitions: Iterable[int]) -> None:
        if stream in self._skip:
            return
        with self._changed:
            if self._stopped:
                return
            self._written.setdefault(stream, set()).update(partitions)
            # the first pass one interval after the first write: a short-lived producer (a CLI
            # call, a test) does not clean at all, a long-lived one regularly
            self._last.setdefault(stream, time.monotonic())
            self._pending.add(stream)
            self._start_locked()

    def _due(self) -> tuple[str | None, float | None]:
        """A due stream, or how long until the next one is due (None: none pending)."""
        now = time.monotonic()
        wait: float | None = None
        for stream in self._pending:
            left = self._last[stream] + self._interval_s - now
            if left <= 0:
                return stream, None
            wait = left if wait is None else min(wait, left)
        return None, wait

    def _run(self) -> None:
        while True:
            with self._changed:
                stream, wait = self._due()
                while stream is None and not self._stopped:
                    self._changed.wait(wait)
                    stream, wait = self._due()
                if self._stopped or stream is None:
                    return
                self._pending.discard(stream)
                self._last[stream] = time.monotonic()
                partitions = set(self._written[stream])
            try:
                self._clean(stream, partitions)
            except Exception as exc:  # noqa: BLE001 - the next write retries; producing goes on
                log.warning(
                    "log cleaner: cleaning stream %r failed (%s: %s); retrying after the next write",
                    stream,
                    type(exc).__name__,
                    exc,
                )
                log.debug("log cleaner: the failure's trace", exc_info=True)

    def _clean(self, stream: str, partitions: set[int]) -> None:
        conn, opened = self._conn(stream)
        if opened:
            conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        policy = read_policy(conn, stream)
        if not policy.cleans:
            self._skip.add(stream)  # a file's policy never changes
            return
        stats = clean_stream(conn, partitions, policy, stopping=lambda: self._stopped)
        self.passes[stream] = stats
        self.pass_count += 1
        if stats.deleted:
            log.debug(
                "log cleaner: stream %r: removed %d messages, freed %d pages",
                stream,
                stats.deleted,
                stats.vacuumed_pages,
            )
