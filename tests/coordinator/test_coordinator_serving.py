"""Stopping a served HTTP server wakes its loop instead of waiting out its poll interval (the
spark runner stops two per job): with an hour-long poll, a stop still returns, the serving thread
ends and the port is closed; a server whose loop never ran is only closed."""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from samza_dagster.coordinator import serving


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        pass


@pytest.mark.timeout(30)
def test_a_stop_wakes_the_serve_loop_however_long_its_poll(monkeypatch):
    monkeypatch.setattr(serving, "SERVE_POLL_S", 3600.0)  # without the wake-up, stop would wait an hour
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    port = server.server_address[1]
    thread = serving.serve_in_thread(server, "test-serving")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:  # it serves
        conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert conn.recv(64).startswith(b"HTTP/1.0 200")
    serving.stop_serving(server, thread)
    assert not thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.timeout(30)
def test_a_server_that_never_served_is_closed_without_waiting_for_its_loop():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    port = server.server_address[1]
    serving.stop_serving(server, None)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
