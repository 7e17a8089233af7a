"""The job coordinator's HTTP service (Samza design): read-only JSON over stdlib ``http.server``.

``GET /`` → the JobModel, ``GET /config`` → the job's config, ``GET /healthz`` → status and model
version (cheap; what containers poll to notice a new model), ``GET /metrics`` → the job's metrics
in Prometheus' text format when a ``prometheus`` metrics reporter is configured (every
container's latest snapshot from the metrics stream). Secrets are masked. Any other path
is a 404 and any other method a 405, both with a JSON error body. With
``job.coordinator.http.token`` set, every request needs ``Authorization: Bearer <token>``; a
bind address other machines reach (``job.coordinator.http.host``) needs one (:func:`check_bind`).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from samza_dagster.config import keys
from samza_dagster.config.errors import ConfigError

log = logging.getLogger(__name__)

TOKEN_KEY = keys.JOB_COORDINATOR_HTTP_TOKEN.name
HOST_KEY = keys.JOB_COORDINATOR_HTTP_HOST.name
VERSION_HEADER = "X-Samza-JobModel-Version"


def is_loopback(host: str) -> bool:
    """Every address ``host`` resolves to is a loopback one (127.0.0.0/8, ::1): only this
    machine reaches a service bound there. A wildcard (``0.0.0.0``, ``::``) is not."""
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]) for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def check_bind(host: str, token: str | None, *, where: str = f"config key {HOST_KEY!r}") -> None:
    """A job coordinator reachable from other machines serves the job's model and config to
    anyone who can reach it: refused without a bearer token (``job.coordinator.http.token``)."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"{where}: {host!r} makes the job coordinator reachable from other machines, and "
            f"{TOKEN_KEY!r} is not set: set a token (containers and Prometheus send it as a bearer "
            "token), or bind 127.0.0.1",
            key=HOST_KEY,
        )


@dataclass(frozen=True)
class ServedModel:
    """What the server answers with, encoded once per model version rather than per request."""

    version: int
    model_json: bytes
    config_json: bytes


class CoordinatorHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    # A restarted coordinator must be able to take the same port straight away.
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        served: Callable[[], ServedModel],
        token: str | None,
        metrics: Callable[[], tuple[bytes, str]] | None = None,
    ) -> None:
        super().__init__(address, _Handler)
        self.served = served
        self.token = token
        #: the Prometheus exposition and its content type, when the job has a prometheus reporter
        self.metrics = metrics


def _json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=False).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    server: CoordinatorHttpServer
    server_version = "samza-dagster-job-coordinator"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        served = self.server.served()
        if path == "/":
            self._send(200, served.model_json, served.version)
        elif path == "/config":
            self._send(200, served.config_json, served.version)
        elif path == "/healthz":
            self._send(200, _json({"status": "ok", "version": served.version}), served.version)
        elif path == "/metrics" and self.server.metrics is not None:
            body, content_type = self.server.metrics()
            self._send(200, body, served.version, content_type=content_type)
        elif path == "/metrics":
            self._send(
                404,
                _json(
                    {
                        "error": "no metrics here: configure a reporter of class prometheus "
                        "(metrics.reporters, metrics.reporter.<name>.class)"
                    }
                ),
            )
        else:
            self._send(404, _json({"error": f"no such resource {path!r}; try /, /config, /healthz or /metrics"}))

    def _method_not_allowed(self) -> None:
        if not self._authorized():
            return
        self._send(
            405,
            _json({"error": f"method {self.command} not allowed; the job coordinator is read-only"}),
            extra={"Allow": "GET"},
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _method_not_allowed  # noqa: N815

    def _authorized(self) -> bool:
        token = self.server.token
        if not token:
            return True
        header = self.headers.get("Authorization", "")
        expected = f"Bearer {token}"
        if hmac.compare_digest(header.encode("utf-8"), expected.encode("utf-8")):
            return True
        self._send(
            401,
            _json({"error": f"missing or wrong bearer token (set by {TOKEN_KEY})"}),
            extra={"WWW-Authenticate": "Bearer"},
        )
        return False

    def _send(
        self,
        status: int,
        body: bytes,
        version: int | None = None,
        extra: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        # Drain a request body so a keep-alive connection stays in sync.
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if version is not None:
            self.send_header(VERSION_HEADER, str(version))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        log.debug("job coordinator http: " + format, *args)
