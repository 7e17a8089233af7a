"""When a Kafka client cannot connect because of security: a refused SASL login, or a TLS
handshake that failed (above all a broker certificate the client does not trust, or a client
certificate the brokers refuse — missing, or signed by a CA they do not trust, on a listener with
``ssl.client.auth=required``).

Both clients treat either as a connection that failed and retry it until their bootstrap timeout,
and then say only that the brokers could not be reached. This module keeps the cause each client
saw — librdkafka's error callback (:class:`ConnectionFailures`), the exception a kafka-python
connection was lost with (:func:`kafka_python_cause`) — and turns it into one line naming the
system, the brokers and the cause (:func:`security_error`). The line never holds the user name or
a password: those keys are masked wherever config is shown, and so stay out of errors too.

librdkafka reports a refused login as ``_AUTHENTICATION`` and a failed handshake as ``_SSL`` (or
first as ``_TRANSPORT`` with OpenSSL's text), each prefixed with the broker and suffixed with
its state. The brokers refuse a client certificate with a TLS alert the client receives (OpenSSL's
"alert bad certificate", "alert certificate unknown" ...): librdkafka reports it as a failed
receive, kafka-python as the ``ssl.SSLError`` its connection was lost with. Java's clients fail at once on an authentication error instead of retrying; so does the
confluent client here: a start that sees one raises at once.
"""

from __future__ import annotations

import re
import ssl
import threading
from typing import Any

from samza_dagster.system.errors import SystemAuthenticationError

AUTHENTICATION = "authentication"
TLS = "tls"

#: librdkafka's error codes (``confluent_kafka.KafkaError``): _AUTHENTICATION, _SSL, _TRANSPORT
_RD_AUTHENTICATION, _RD_SSL, _RD_TRANSPORT = -169, -181, -195
#: "sasl_ssl://127.0.0.1:9094/bootstrap: " before librdkafka's text, "(after 7ms in state ...)" after it
_RD_BROKER_PREFIX = re.compile(r"^[a-z_]+://[^ ]+: ")
_RD_STATE_SUFFIX = re.compile(r"\s*\(after \d+ms in state .*\)\s*$")
#: OpenSSL's "error:0A000086:SSL routines::" and Python's "[SSL: CERTIFICATE_VERIFY_FAILED] ... (_ssl.c:1006)"
_OPENSSL_CODE = re.compile(r"error:[0-9A-F]+:[^:]*::|\[SSL: [A-Z0-9_]+\] |\s*\(_ssl\.c:\d+\)")
_TLS_WORDS = ("SSL", "certificate", "handshake", "Handshake")
#: the TLS alerts a server sends about the client's certificate (RFC 8446 6.2; OpenSSL's spelling
#: "sslv3 alert bad certificate", "tlsv13 alert certificate required") — never about its own
_CLIENT_CERTIFICATE_ALERT = re.compile(
    r"alert (bad certificate|certificate unknown|certificate required|unknown ca|certificate expired"
    r"|certificate revoked|unsupported certificate|access denied)"
)


def _clean(text: str) -> str:
    text = _RD_STATE_SUFFIX.sub("", _RD_BROKER_PREFIX.sub("", text.strip()))
    return _OPENSSL_CODE.sub("", text).strip()


class ConnectionFailures:
    """librdkafka's ``error_cb``: keeps the last security failure it was told of (called on the
    thread that polls the client)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cause: tuple[str, str] | None = None

    def record(self, error: Any) -> None:
        code, text = error.code(), error.str()
        if code == _RD_AUTHENTICATION:
            kind = AUTHENTICATION
        elif code == _RD_SSL or (code == _RD_TRANSPORT and any(word in text for word in _TLS_WORDS)):
            kind = TLS
        else:
            return
        with self._lock:
            # _SSL's text says more than the _TRANSPORT that precedes it for the same handshake
            if not (self._cause is not None and self._cause[0] == TLS and code == _RD_TRANSPORT):
                self._cause = (kind, _clean(text))

    @property
    def cause(self) -> tuple[str, str] | None:
        with self._lock:
            return self._cause


def kafka_python_cause(exc: BaseException | None) -> tuple[str, str] | None:
    """The security failure a kafka-python connection was lost with, if that was one."""
    if exc is None:
        return None
    from kafka.errors import KafkaConnectionError, SaslAuthenticationFailedError

    if isinstance(exc, SaslAuthenticationFailedError):
        # "[Error 58] SaslAuthenticationFailedError: SaslAuthenticationFailedError: <broker's text>"
        text = str(exc.args[0]) if exc.args else str(exc)
        return AUTHENTICATION, _clean(text.split("Error: ", 1)[-1])
    if isinstance(exc, KafkaConnectionError) and "Handshake failed" in str(exc):
        # str() puts the class name first; the first argument is "Handshake failed: <OpenSSL's text>"
        return TLS, _clean(str(exc.args[0]) if exc.args else str(exc))
    if isinstance(exc, KafkaConnectionError) and exc.args and isinstance(exc.args[0], ssl.SSLError):
        # the handshake passed on the client's side (TLS 1.3 ends it before the server has checked
        # the client's certificate); the server's alert about it arrives with the first read
        return TLS, _clean(str(exc.args[0]))
    return None


def security_error(system: str, bootstrap: str, what: str, cause: tuple[str, str]) -> SystemAuthenticationError:
    """The one line for a security failure of ``what`` (``consumer start``, ``admin`` ...)."""
    kind, detail = cause
    if kind == AUTHENTICATION:
        return SystemAuthenticationError(
            f"Kafka system {system!r}: the brokers at {bootstrap} refused the SASL login ({what}): {detail}; "
            "check the user name and password (sasl.username, sasl.password)"
        )
    if _CLIENT_CERTIFICATE_ALERT.search(detail):
        return SystemAuthenticationError(
            f"Kafka system {system!r}: the brokers at {bootstrap} refused the client certificate ({what}): "
            f"{detail}; they require one (ssl.client.auth=required) signed by a CA they trust: "
            "ssl.certificate.location and ssl.key.location (ssl.certfile, ssl.keyfile) must name it"
        )
    if "certificate verify failed" in detail:
        return SystemAuthenticationError(
            f"Kafka system {system!r}: the TLS certificate of the brokers at {bootstrap} is not trusted ({what}): "
            f"{detail}; ssl.ca.location (ssl.cafile) must name the CA that signed it"
        )
    return SystemAuthenticationError(
        f"Kafka system {system!r}: the TLS handshake with the brokers at {bootstrap} failed ({what}): {detail}"
    )
