"""How the Kafka system's clients connect, and what a failed first connection means.

Each client's start makes its first connection here: kafka-python's constructors bootstrap
eagerly (:func:`connect`), a librdkafka client is asked for the cluster's metadata
(:func:`first_metadata`). Brokers that cannot be reached fail within ``bootstrap.timeout.ms`` as
:class:`SystemUnavailableError` naming the address; brokers that refuse the login or a TLS
handshake that fails are :class:`SystemAuthenticationError` naming the cause (security.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from samza_dagster.system.kafka import kafka_python_fixes
from samza_dagster.system.kafka.errors import unavailable
from samza_dagster.system.kafka.security import ConnectionFailures, kafka_python_cause, security_error

T = TypeVar("T")

#: how often a starting librdkafka client looks at its error callback while it waits for metadata
_METADATA_WAIT_S = 0.2


def connect(system: str, bootstrap: str, what: str, make: Callable[[], T], settings: Mapping[str, Any]) -> T:
    """Create a kafka-python client (``settings`` are its keyword arguments), turning a failed
    bootstrap into SystemUnavailableError — SystemAuthenticationError when the brokers refused
    the login or the TLS handshake failed.

    kafka-python bootstraps eagerly in the constructor and gives up after
    ``bootstrap_timeout_ms`` (5 s by default here) with KafkaTimeoutError.
    """
    # kafka-python loads only when a Kafka system uses it (kafka.client picks the client library)
    from kafka.errors import (
        KafkaConnectionError,
        KafkaTimeoutError,
        MetadataEmptyBrokerList,
        SaslAuthenticationFailedError,
    )

    kafka_python_fixes.apply()
    kafka_python_fixes.filter_logs()
    client_id = str(settings.get("client_id") or "")
    kafka_python_fixes.forget_failures(client_id)
    kafka_python_fixes.remember_started_io()
    try:
        return make()
    except (
        KafkaTimeoutError,
        MetadataEmptyBrokerList,
        KafkaConnectionError,
        SaslAuthenticationFailedError,
        OSError,
    ) as exc:
        kafka_python_fixes.stop_started_io()  # the half-made client would retry for good
        causes = (kafka_python_cause(e) for e in (exc, *kafka_python_fixes.recent_failures(client_id)))
        cause = next((c for c in causes if c is not None), None)
        if cause is not None:
            raise security_error(system, bootstrap, what, cause) from exc
        raise unavailable(system, bootstrap, exc, what) from exc
    finally:
        kafka_python_fixes.forget_failures(client_id)
        kafka_python_fixes.forget_started_io()


def first_metadata(
    client: Any, failures: ConnectionFailures, system: str, bootstrap: str, timeout_s: float, what: str
) -> Any:
    """A starting librdkafka client's first cluster metadata, within ``timeout_s``; raises
    SystemAuthenticationError as soon as its error callback saw a security failure, else
    SystemUnavailableError at the timeout. (The callback runs only inside ``poll``.)"""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return client.list_topics(timeout=max(0.01, min(_METADATA_WAIT_S, deadline - time.monotonic())))
        except KafkaException as exc:
            client.poll(0)
            if failures.cause is not None:
                raise security_error(system, bootstrap, what, failures.cause) from exc
            if time.monotonic() >= deadline:
                raise unavailable(system, bootstrap, exc, what) from exc
