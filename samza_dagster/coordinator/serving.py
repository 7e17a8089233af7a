"""Serving an ``http.server`` in a thread, and stopping it without waiting out its poll.

``socketserver``'s ``shutdown()`` only sets a flag that ``serve_forever`` reads after its select
returns, so a stop waits up to the poll interval. The spark runner stops two servers per job
(the job coordinator's and its control endpoint), each polling every 0.2 s: a bounded job's wall
time varied by 0–0.4 s with where the polls happened to be — traced as the quantum behind B6's
two modes (docs/benchmarks.md, B6). :func:`stop_serving` wakes the loop with a connection to the
server's own address, so a stop takes milliseconds; the poll interval only bounds a stop whose
wake-up could not connect.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time

#: how long ``serve_forever`` waits in one select before it looks for a shutdown request
SERVE_POLL_S = 0.2


def serve_in_thread(server: socketserver.BaseServer, name: str) -> threading.Thread:
    """Start ``server.serve_forever`` on a daemon thread named ``name``."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SERVE_POLL_S}, name=name, daemon=True
    )
    thread.start()
    return thread


def _wake(server: socketserver.BaseServer) -> None:
    """One connection to the server's address, so its select returns (the request is empty: the
    handler reads end of file and closes it)."""
    address = getattr(server, "server_address", None)
    if not isinstance(address, tuple):
        return
    try:
        with socket.create_connection(address[:2], timeout=0.1):
            pass
    except OSError:
        pass  # the poll interval still ends the wait


def stop_serving(server: socketserver.BaseServer, thread: threading.Thread | None, timeout_s: float = 5.0) -> None:
    """Stop ``server`` (served on ``thread`` by :func:`serve_in_thread`), close its socket and join
    the thread. A server whose loop never ran (``thread`` None or dead) is only closed: its
    ``shutdown()`` would wait forever."""
    if thread is not None and thread.is_alive():
        stopper = threading.Thread(target=server.shutdown, name=f"{thread.name}-stop", daemon=True)
        stopper.start()
        deadline = time.monotonic() + timeout_s
        while stopper.is_alive() and time.monotonic() < deadline:
            _wake(server)
            stopper.join(0.005)
    server.server_close()
    if thread is not None:
        thread.join(timeout=timeout_s)
