"""The producer's three timeouts, derived from each other so any valid value of one works alone.

Kafka's clients tie them together and refuse a client that breaks the tie:
* a message's delivery timeout (Java's ``delivery.timeout.ms``, librdkafka's
  ``message.timeout.ms``; 120 s by default) must not exceed the transaction timeout
  (``transaction.timeout.ms``) — librdkafka refuses the transactional client otherwise;
* it must be at least ``linger.ms`` + ``request.timeout.ms`` (30 s by default) — Java's and
  kafka-python's producers refuse it otherwise.

A user who sets one of them (``transaction.timeout.ms=30000`` to have a crashed container's
transaction aborted sooner, say) gets the others lowered to fit, where they are unset; one who sets
two that cannot fit gets a ConfigError naming both keys, before any client exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError

#: the clients' own defaults (Java, librdkafka and kafka-python agree)
DEFAULT_DELIVERY_TIMEOUT_MS = 120_000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
#: a request never times out sooner than this when derived from a short delivery timeout
MIN_REQUEST_TIMEOUT_MS = 1_000

#: the spellings of the delivery timeout, Java's first
DELIVERY_KEYS = ("delivery.timeout.ms", "message.timeout.ms")


@dataclass(frozen=True)
class ProducerTimeouts:
    """Values to set (Java spellings) where the user set none; empty when the defaults fit."""

    delivery_timeout_ms: int | None = None
    request_timeout_ms: int | None = None


def producer_timeouts(system: str, config: Config, linger_ms_default: int) -> ProducerTimeouts:
    """Check the producer timeouts of ``systems.<system>.producer.*`` and derive the unset ones."""
    prefix = keys.prefix(keys.SYSTEM_PRODUCER_KEYS, system=system)

    def user(name: str) -> tuple[str, int] | None:
        value = config.get_str(prefix + name)
        if value is None or not value.strip():
            return None
        try:
            return prefix + name, int(value)
        except ValueError:
            raise ConfigError(
                f"config key {prefix + name!r} must be an integer (ms), got {value!r}", key=prefix + name
            ) from None

    transaction = user("transaction.timeout.ms")
    delivery = next((found for name in DELIVERY_KEYS if (found := user(name)) is not None), None)
    request = user("request.timeout.ms")
    linger = user("linger.ms")
    linger_ms = linger[1] if linger else linger_ms_default
    if transaction and delivery and delivery[1] > transaction[1]:
        raise ConfigError(
            f"config key {delivery[0]!r}={delivery[1]} must not exceed {transaction[0]!r}={transaction[1]}: "
            "a transaction's messages are delivered before it times out (Kafka's clients refuse it)",
            key=delivery[0],
        )
    delivery_ms = (
        delivery[1]
        if delivery
        else min(DEFAULT_DELIVERY_TIMEOUT_MS, transaction[1] if transaction else DEFAULT_DELIVERY_TIMEOUT_MS)
    )
    derived_delivery = None if delivery or delivery_ms == DEFAULT_DELIVERY_TIMEOUT_MS else delivery_ms
    request_ms = request[1] if request else DEFAULT_REQUEST_TIMEOUT_MS
    if delivery_ms >= linger_ms + request_ms:
        return ProducerTimeouts(derived_delivery, None)
    derived_request = delivery_ms - linger_ms
    if request is not None or derived_request < MIN_REQUEST_TIMEOUT_MS:
        short = delivery or transaction or request or linger
        assert short is not None  # the defaults fit each other
        raise ConfigError(
            f"config key {short[0]!r}={short[1]} leaves a delivery timeout of {delivery_ms} ms, below "
            f"linger.ms ({linger_ms}) + request.timeout.ms ({request_ms if request else MIN_REQUEST_TIMEOUT_MS}) "
            f"of {prefix!r}: Kafka's producers refuse it; raise the one or lower the others",
            key=short[0],
        )
    return ProducerTimeouts(derived_delivery, derived_request)
