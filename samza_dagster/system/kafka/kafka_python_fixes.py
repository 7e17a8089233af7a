"""Work-arounds for kafka-python (3.0.12) where it changes what a user sees; applied once, before
the first kafka-python client of the process is made (:func:`apply`, called by ``errors.connect``).

1. **Bytes read together with the end of the stream are dropped** (``kafka/net/transport.py``):
   ``_sock_recv`` reads until ``recv`` returns nothing, then returns what it read *and* the
   disconnect, and ``_read_from_sock`` aborts on the disconnect without handing the bytes to the
   connection. A Kafka broker answers a failed SASL login with an error response and closes the
   connection right after it, so the client never saw the answer: a wrong password looked like
   "socket disconnected". Fixed by returning the bytes first and the disconnect on the next read
   (a socket at its end stays readable, so that read comes at once): the connection now fails
   with ``SaslAuthenticationFailedError`` and the broker's message.
2. **Why a connection failed is only logged.** The bootstrap retries a refused login or a failed
   TLS handshake until ``bootstrap_timeout_ms`` and then raises "Unable to bootstrap", naming no
   cause. The last few connection failures are remembered here per thread — a client's IO
   thread (``kafka-io-<client_id>``), or the thread that creates it when the bootstrap runs there
   (the producer's) — so :func:`recent_failures` can tell the creator why; the last failure alone
   may only be the request the bootstrap deadline cut short.
3. **Secrets in DEBUG logs.** The admin client logs its whole configuration (passwords included)
   and every connection logs its requests, a SASL PLAIN login's password among them. A filter on
   kafka-python's loggers masks both before any handler sees the record.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from samza_dagster.config.secrets import MASK, is_secret_key

_applied = False
_lock = threading.Lock()
#: the transport attribute holding a disconnect read together with bytes, reported next read
_PENDING = "_samza_pending_disconnect"
#: IO thread name → the exceptions its last lost connections were lost with, oldest first
_failures: dict[str, deque[BaseException]] = {}
_REMEMBERED = 8
#: a SASL token in a logged request (PLAIN sends the password in it)
_AUTH_BYTES = re.compile(r"auth_bytes=b(['\"]).*?(?<!\\)\1")


def apply() -> None:
    """Patch kafka-python's transports and connections, filter its loggers (idempotent)."""
    global _applied
    if _applied:
        return
    with _lock:
        if _applied:
            return
        from kafka.net.connection import KafkaConnection
        from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport

        for cls in (KafkaTCPTransport, KafkaSSLTransport):
            if "_sock_recv" in vars(cls):  # each class has its own (SSL reads through its wrapper)
                cls._sock_recv = _bytes_before_disconnect(vars(cls)["_sock_recv"])  # type: ignore[method-assign]
        KafkaConnection.connection_lost = _remember_failure(KafkaConnection.connection_lost)  # type: ignore[method-assign]
        _applied = True
    filter_logs()


def filter_logs() -> None:
    """Add the masking filter to every kafka-python logger that exists (idempotent; loggers are
    made when their modules are imported, so :func:`apply` runs it again before each client)."""
    names = [name for name in logging.Logger.manager.loggerDict if name == "kafka" or name.startswith("kafka.")]
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _MaskSecrets) for f in logger.filters):
            logger.addFilter(_MASK_SECRETS)


def recent_failures(client_id: str) -> list[BaseException]:
    """Why the last connections of the client ``client_id`` (being created on this thread) were
    lost, newest first."""
    with _lock:
        return [exc for thread in _threads(client_id) for exc in reversed(_failures.get(thread, ()))]


def forget_failures(client_id: str) -> None:
    with _lock:
        for thread in _threads(client_id):
            _failures.pop(thread, None)


def _threads(client_id: str) -> tuple[str, str]:
    return f"kafka-io-{client_id}", threading.current_thread().name


def _bytes_before_disconnect(original: Any) -> Any:
    def _sock_recv(self: Any) -> tuple[bytes, Exception | None]:
        pending = getattr(self, _PENDING, None)
        if pending is not None:
            setattr(self, _PENDING, None)
            return b"", pending
        data, error = original(self)
        if data and error is not None:
            setattr(self, _PENDING, error)
            return data, None
        return data, error

    return _sock_recv


def _remember_failure(original: Any) -> Any:
    def connection_lost(self: Any, exc: BaseException | None) -> Any:
        if exc is not None:
            with _lock:
                _failures.setdefault(threading.current_thread().name, deque(maxlen=_REMEMBERED)).append(exc)
        return original(self, exc)

    return connection_lost


class _MaskSecrets(logging.Filter):
    """Masks secret settings in a logged configuration and SASL tokens in a logged request."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(a, Mapping) for a in args):
            record.args = tuple(_masked(a) if isinstance(a, Mapping) else a for a in args)
        elif isinstance(args, Mapping):
            record.args = _masked(args)
        if record.levelno <= logging.DEBUG:
            message = record.getMessage()
            if "auth_bytes=" in message:
                record.msg, record.args = _AUTH_BYTES.sub(f"auth_bytes={MASK}", message), None
        return True


def _masked(settings: Mapping[Any, Any]) -> dict[Any, Any]:
    # kafka-python's names (sasl_plain_password, ssl_password) in Samza's dotted form
    return {k: (MASK if is_secret_key("." + str(k).replace("_", ".")) else v) for k, v in settings.items()}


_MASK_SECRETS = _MaskSecrets()
