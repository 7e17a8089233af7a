"""The log producer's sealer: format 3's head seals on a thread of their own.

A batch that fills a stream file's head (runs_format.py) leaves it due a seal: one statement that
moves the whole head into a run, about 40 ms of SQLite work per 32,000 rows. Run by the batch's
own transaction, it stopped the sending thread for that long at every seal; at 1,024 partitions
the seals were a quarter of the producer's time (docs/benchmarks.md, "Format 3's producer at
width, traced"). The producer defers the seal instead (``insert(..., defer_seal=True)``) and asks
this thread for it after its batch committed. The seal runs in a write transaction of its own on
the thread's own connection to the file — SQLite's write lock orders it with every other writer,
in this process or another, as it did inside the batch — and ``sqlite3`` lets go of the GIL while
the statement runs, so ``send`` goes on buffering meanwhile: the producer holds a full batch back
while the seal has the lock (``sealing``) and writes what gathered as one larger batch after it.

Nothing depends on when a seal happens: a read finds a row in the head or in a run alike, and the
offsets a seal moves are unchanged. If the sealer falls behind or its seal fails (it logs a
warning and waits for the next request), the head grows until the writer that finds it at
``RunsFormat.seal_backlog`` times its size seals it itself. ``stop`` runs the seals already asked
for before it returns, so a stopped producer leaves no seal half-requested.
"""

from __future__ import annotations

import logging
import time

from samza_dagster.system.log import storage
from samza_dagster.system.log.file_worker import StreamFileWorker

log = logging.getLogger(__name__)


class HeadSealer(StreamFileWorker):
    """One producer's sealer thread, started at its first request."""

    def __init__(self, system: str, root: str, synchronous: str, busy_timeout_s: float) -> None:
        super().__init__(f"log-sealer-{system}", system, root, synchronous, busy_timeout_s)
        self._system = system
        self._due: list[str] = []  # streams asked for, in the order asked
        #: the stream whose seal is running, read without a lock by ``send`` (a stale answer only
        #: holds a batch back a little longer, or writes it a little sooner)
        self.sealing: str | None = None
        self.seals = 0
        self.seal_s = 0.0

    def request(self, stream: str) -> None:
        """Seal ``stream``'s head soon, if it is still due then."""
        with self._changed:
            if self._stopped:
                return
            if stream == self.sealing or stream in self._due:
                return  # a seal already on its way covers it (it looks at the head once it has the lock)
            self._due.append(stream)
            self._start_locked()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due and not self._stopped:
                    self._changed.wait()
                if not self._due:
                    return  # stopped, and every seal asked for is done
                stream = self._due.pop(0)
            self.sealing = stream
            try:
                self._seal(stream)
            except Exception as exc:  # noqa: BLE001 - the head stays as it is; a later batch asks again
                log.warning(
                    "log system %r: sealing the head of stream %r failed (a later batch asks again): %s",
                    self._system,
                    stream,
                    exc,
                )
            finally:
                self.sealing = None

    def _seal(self, stream: str) -> None:
        conn, _ = self._conn(stream)
        started = time.perf_counter()
        storage.begin_immediate(conn, self._busy_timeout_s)
        try:
            sealed = conn.log_format.seal_if_due(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if sealed:
            self.seals += 1
            self.seal_s += time.perf_counter() - started
