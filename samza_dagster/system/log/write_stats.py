"""What a log producer's writes cost: transactions and rows by what started them, the time the
caller spent in them, the time spent waiting for each stream file's write lock and committing.

The causes: ``batch`` is ``send`` writing a full batch (``log.batch.size``) itself; ``linger`` and
``full`` are the producer's thread writing a buffer whose linger ended, or one that a ``send``
filled just before the thread took it; ``flush`` is a flush (a commit) or a transaction's end. The
run loop waits for ``batch`` and ``flush`` writes (their ``write_s``), never for the thread's.

The write lock is per stream file and shared by every process writing the file, so the lock wait
is what several containers writing one stream pay for each other's transactions, and the commit
time is what ``log.synchronous`` costs (FULL: an fsync per transaction). Both are measured around
the two SQLite calls that block (``BEGIN IMMEDIATE`` and ``COMMIT``): a few clock reads per
transaction, never per message. The container's summary shows the totals under
``producer-<system>``; B6 in docs/benchmarks.md reads them from there.
"""

from __future__ import annotations

import threading
from typing import Any

#: what made the producer write a stream's buffer (module docstring)
CAUSES = ("batch", "full", "linger", "flush")


class WriteStats:
    """Totals of one producer, updated by whichever thread wrote (the producer's thread, the run
    loop at back-pressure or a flush); a lock keeps the sums whole, taken once per transaction."""

    __slots__ = ("_lock", "transactions", "rows", "write_s", "lock_wait_s", "max_lock_wait_s", "commit_s")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.transactions = dict.fromkeys(CAUSES, 0)
        self.rows = dict.fromkeys(CAUSES, 0)
        self.write_s = dict.fromkeys(CAUSES, 0.0)
        self.lock_wait_s = 0.0
        self.max_lock_wait_s = 0.0
        self.commit_s = 0.0

    def record(self, cause: str, rows: int, write_s: float, lock_wait_s: float, commit_s: float) -> None:
        """One transaction of ``rows``: ``write_s`` from the call to the end (waiting for another
        thread's write of the same stream included), ``lock_wait_s`` in ``BEGIN IMMEDIATE``,
        ``commit_s`` in ``COMMIT``."""
        with self._lock:
            self.transactions[cause] += 1
            self.rows[cause] += rows
            self.write_s[cause] += write_s
            self.lock_wait_s += lock_wait_s
            self.commit_s += commit_s
            if lock_wait_s > self.max_lock_wait_s:
                self.max_lock_wait_s = lock_wait_s

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "transactions": dict(self.transactions),
                "rows": dict(self.rows),
                "write_s": {cause: round(s, 4) for cause, s in self.write_s.items()},
                "lock_wait_s": round(self.lock_wait_s, 4),
                "max_lock_wait_s": round(self.max_lock_wait_s, 4),
                "commit_s": round(self.commit_s, 4),
            }
