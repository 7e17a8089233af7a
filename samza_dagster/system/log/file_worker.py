"""What the log producer's background workers over stream files share: the cleaner (cleaner.py)
and the sealer (sealer.py) each run one thread, started by the first stream handed to it — a
producer that never needs it starts none — with a connection of its own per stream file it works
on, closed when the worker stops."""

from __future__ import annotations

import threading

from samza_dagster.system.log import storage


class StreamFileWorker:
    """A thread of ``_run`` over stream files. Subclasses hold ``_changed`` while they read or
    change what is to do, call ``_start_locked`` when there is work, and end ``_run`` once
    ``_stopped`` is set (after finishing what they must)."""

    def __init__(self, thread_name: str, system: str, root: str, synchronous: str, busy_timeout_s: float) -> None:
        self._thread_name = thread_name
        self._open_args = (system, root, synchronous, busy_timeout_s)
        self._busy_timeout_s = busy_timeout_s
        self._changed = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._conns: dict[str, storage.StreamConnection] = {}

    @property
    def started(self) -> bool:
        """Whether the thread was started (work was handed to it)."""
        return self._thread is not None

    def _start_locked(self) -> None:
        """With ``_changed`` held: start the thread if it is not running, and wake it."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
            self._thread.start()
        self._changed.notify()

    def _conn(self, stream: str) -> tuple[storage.StreamConnection, bool]:
        """The worker's connection to ``stream``'s file, and whether it was opened just now."""
        conn = self._conns.get(stream)
        if conn is not None:
            return conn, False
        system, root, synchronous, busy_timeout_s = self._open_args
        conn = self._conns[stream] = storage.open_stream(system, root, stream, synchronous, busy_timeout_s)[0]
        return conn, True

    def stop(self) -> None:
        """Tell the thread to stop, wait for it, and close its connections."""
        with self._changed:
            self._stopped = True
            self._changed.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def _run(self) -> None:
        raise NotImplementedError
