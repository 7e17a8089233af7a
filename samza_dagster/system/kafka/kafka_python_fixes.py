"""Work-arounds for kafka-python (3.0.12) where it changes what a user sees; applied once, before
the first kafka-python client of the process is made (:func:`apply`, called by ``connecting.connect``).

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
3. **Secrets in DEBUG logs.** At DEBUG kafka-python logs its admin's whole configuration
   (passwords included), each request (a SASL PLAIN login holds the password) and the raw bytes
   of what it sends and fetches — among them the coordinator stream, which holds the job's
   config, secrets too. The Kafka system registers every secret value of the configs it builds
   (:func:`mask_in_logs`), and a filter on kafka-python's loggers replaces each with ``********``
   before any handler sees the record (the filter runs only for records the level lets through:
   nothing is spent on it below DEBUG in a normal run).
4. **A client whose constructor fails leaves its IO thread running.** The admin client starts its
   IO thread before it bootstraps and does not stop it when the bootstrap fails: the thread keeps
   reconnecting (a refused login: to the broker, for good) and logging errors for the rest of the
   process. The IO loops a thread starts while it creates a client are remembered
   (:func:`remember_started_io`), and :func:`stop_started_io` stops them when the creation failed.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections import deque
from collections.abc import Iterable
from typing import Any

from samza_dagster.config.secrets import scrub

_applied = False
_lock = threading.Lock()
#: the transport attribute holding a disconnect read together with bytes, reported next read
_PENDING = "_samza_pending_disconnect"
#: IO thread name → the exceptions its last lost connections were lost with, oldest first
_failures: dict[str, deque[BaseException]] = {}
_REMEMBERED = 8
#: creating thread's id → the IO loops (NetworkSelector) it started since remember_started_io()
_started_io: dict[int, list[weakref.ref[Any]]] = {}
#: how long a failed client's IO loop is given to stop
_STOP_IO_MS = 2000
#: the secret values to mask in kafka-python's log records, as written and as they appear
#: inside logged JSON and bytes (value → itself, the shape scrub() takes)
_secrets: dict[str, str] = {}


def apply() -> None:
    """Patch kafka-python's transports and connections, filter its loggers (idempotent)."""
    global _applied
    if _applied:
        return
    with _lock:
        if _applied:
            return
        from kafka.net.connection import KafkaConnection
        from kafka.net.selector import NetworkSelector
        from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport

        for cls in (KafkaTCPTransport, KafkaSSLTransport):
            if "_sock_recv" in vars(cls):  # each class has its own (SSL reads through its wrapper)
                cls._sock_recv = _bytes_before_disconnect(vars(cls)["_sock_recv"])  # type: ignore[method-assign]
        KafkaConnection.connection_lost = _remember_failure(KafkaConnection.connection_lost)  # type: ignore[method-assign]
        NetworkSelector.start = _remember_start(NetworkSelector.start)  # type: ignore[method-assign]
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


def mask_in_logs(values: Iterable[str]) -> None:
    """Mask ``values`` (a config's secret values) in every kafka-python log record from now on."""
    forms: dict[str, str] = {}
    for value in values:
        for text in (value, json.dumps(value)[1:-1]):
            for form in (text, repr(text.encode())[2:-1]):
                forms[form] = form
    global _secrets
    with _lock:
        _secrets = {**_secrets, **forms}  # replaced, never changed: a filter reads it unlocked


def recent_failures(client_id: str) -> list[BaseException]:
    """Why the last connections of the client ``client_id`` (being created on this thread) were
    lost, newest first."""
    with _lock:
        return [exc for thread in _threads(client_id) for exc in reversed(_failures.get(thread, ()))]


def forget_failures(client_id: str) -> None:
    with _lock:
        for thread in _threads(client_id):
            _failures.pop(thread, None)


def remember_started_io() -> None:
    """Remember the IO loops this thread starts from now on (it is about to create a client)."""
    with _lock:
        _started_io[threading.get_ident()] = []


def stop_started_io() -> None:
    """Stop the IO loops this thread started since :func:`remember_started_io`: its client's
    creation failed, and nothing else will."""
    with _lock:
        started = _started_io.pop(threading.get_ident(), [])
    for ref in started:
        selector = ref()
        if selector is not None:
            selector.stop(timeout_ms=_STOP_IO_MS)


def forget_started_io() -> None:
    """Stop remembering (the client was made: its IO loops are its own)."""
    with _lock:
        _started_io.pop(threading.get_ident(), None)


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


def _remember_start(original: Any) -> Any:
    def start(self: Any) -> Any:
        result = original(self)
        with _lock:
            started = _started_io.get(threading.get_ident())
            if started is not None:
                started.append(weakref.ref(self))
        return result

    return start


class _MaskSecrets(logging.Filter):
    """Replaces the registered secret values in a record's message (with its arguments)."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = _secrets
        if secrets:
            message = record.getMessage()
            masked = scrub(message, secrets)
            if masked != message:
                record.msg, record.args = masked, None
        return True


_MASK_SECRETS = _MaskSecrets()
