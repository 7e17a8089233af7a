"""Samza-style Kafka system config → librdkafka settings (the ``confluent`` client).

``systems.<s>.consumer.*`` and ``systems.<s>.producer.*`` keep Kafka's dotted names, which are
librdkafka's too for everything a job usually sets (``bootstrap.servers``,
``security.protocol``, ``sasl.mechanism``, ``fetch.max.bytes``, ``linger.ms`` ...). The spellings
the kafka-python client uses for the same settings are translated (``sasl.plain.username`` →
``sasl.username``, ``ssl.cafile`` → ``ssl.ca.location`` ...), so one config works with either
client. A key librdkafka does not know fails when the client is created, as a ConfigError naming
the full config key (see :func:`config_error`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.system.kafka.timeouts import DEFAULT_DELIVERY_TIMEOUT_MS, producer_timeouts

log = logging.getLogger(__name__)

#: Java / kafka-python spellings → librdkafka's
TRANSLATED = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "max.poll.records": "fetch.batch.messages",  # this system's consume() batch, not librdkafka's
    "request.timeout.ms@consumer": "socket.timeout.ms",
    "sasl.plain.username": "sasl.username",
    "sasl.plain.password": "sasl.password",
    "ssl.cafile": "ssl.ca.location",
    "ssl.certfile": "ssl.certificate.location",
    "ssl.keyfile": "ssl.key.location",
    "ssl.password": "ssl.key.password",
    "ssl.crlfile": "ssl.crl.location",
}
#: the spelling with a value of its own: kafka-python's ``ssl.check.hostname`` (true/false) is
#: librdkafka's ``ssl.endpoint.identification.algorithm`` (https/none) — hostname verification
#: only; the certificate is verified either way (``enable.ssl.certificate.verification`` stays on)
HOSTNAME_CHECK = "ssl.check.hostname"
HOSTNAME_ALGORITHM = "ssl.endpoint.identification.algorithm"
#: Java's spelling of "no hostname verification" is the empty value; librdkafka's is ``none``
_ALGORITHMS = {"true": "https", "false": "none", "https": "https", "none": "none", "": "none"}
#: how long a client waits for an unreachable broker before failing with its address; read by
#: this system, not passed to librdkafka (kafka-python's name, which the Dagster resource sets)
BOOTSTRAP_TIMEOUT = keys.SYSTEM_BOOTSTRAP_TIMEOUT_MS.name.split(".consumer.", 1)[1]
DEFAULT_BOOTSTRAP_TIMEOUT_MS: int = keys.SYSTEM_BOOTSTRAP_TIMEOUT_MS.default
#: "consumer" / "producer" → the namespace of that client's settings
_CLIENT_KEYS = {"consumer": keys.SYSTEM_CONSUMER_KEYS, "producer": keys.SYSTEM_PRODUCER_KEYS}
#: keys of the Java or kafka-python clients that mean nothing to librdkafka: ignored with a warning
IGNORED = frozenset(
    {
        "zookeeper.connect",
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "api.version",
        "metrics.enabled",
        "allow.auto.create.topics",
    }
)

#: librdkafka's log lines, per system, go to the logger ``<this>.<system>``
LIBRDKAFKA_LOGGER = "samza_dagster.system.kafka.librdkafka"

#: settings confluent-kafka's Python layer reads itself (not librdkafka): they must be bools
PYTHON_BOOLEANS = frozenset({"delivery.report.only.error"})

CONSUMER_DEFAULTS: dict[str, Any] = {
    # offsets live in Samza's checkpoints: no group commits, no stored offsets, no rebalance
    # (partitions are assigned from the job model); librdkafka still wants a group id
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "earliest",
    "allow.auto.create.topics": False,
    # a resumed partition (the consumer pauses one left unrequested past park.max.bytes) is
    # fetched again at once: librdkafka purges a paused partition's prefetched messages, so a long
    # broker-side fetch wait would stall it behind partitions that have no new data
    "fetch.wait.max.ms": 100,
    # Keep librdkafka's queue fed (docs/reference.md, "Kafka consumer defaults"). With
    # librdkafka's own defaults a partition checked while the queue holds >= 100,000 messages is
    # not fetched again for 1 s, and nothing wakes the fetcher early: a consumer faster than
    # ~100k msgs/s drains the queue and idles the rest of each second (B2 at 1M messages: 26 s
    # of 46 s inside consume(), mostly waiting). A lower threshold with a short back-off fetches
    # again as soon as the queue has room; the byte bound keeps the queue's memory small.
    "fetch.queue.backoff.ms": 10,
    "queued.min.messages": 20_000,
    "queued.max.messages.kbytes": 32_768,
}
PRODUCER_DEFAULTS: dict[str, Any] = {
    # Kafka's Java default partitioner: keyed messages land where Java clients put them
    "partitioner": "murmur2_random",
    "linger.ms": 5,
    "acks": "all",
    # as Java clients (since Kafka 3.0) and kafka-python: a retried batch keeps its place in the
    # partition and is written once — librdkafka's own default (off) lets a batch that failed
    # once (e.g. a leader not yet known for a new topic) land behind the batches sent after it
    "enable.idempotence": True,
    # the delivery callback (a Python call) only for messages that failed: the producer needs
    # nothing from a success, and flush() waits for every message either way
    "delivery.report.only.error": True,
}


@dataclass(frozen=True)
class ConfluentConfigs:
    system: str
    consumer: dict[str, Any]
    producer: dict[str, Any]
    #: librdkafka key → the full config key it came from (to name it in errors), per client
    consumer_sources: dict[str, str]
    producer_sources: dict[str, str]
    bootstrap_servers: str
    bootstrap_timeout_s: float


def confluent_configs(system: str, config: Config) -> ConfluentConfigs:
    consumer_prefix = keys.prefix(keys.SYSTEM_CONSUMER_KEYS, system=system)
    producer_prefix = keys.prefix(keys.SYSTEM_PRODUCER_KEYS, system=system)
    consumer_sources: dict[str, str] = {}
    producer_sources: dict[str, str] = {}
    consumer = _translate(config.subset(consumer_prefix), consumer_prefix, consumer_sources)
    producer = _translate(config.subset(producer_prefix), producer_prefix, producer_sources)
    bootstrap = consumer.get("bootstrap.servers") or producer.get("bootstrap.servers")
    if not bootstrap:
        key = consumer_prefix + "bootstrap.servers"
        raise ConfigError(f"Kafka system {system!r} needs {key!r} (or {producer_prefix}bootstrap.servers)", key=key)
    consumer.setdefault("bootstrap.servers", bootstrap)
    producer.setdefault("bootstrap.servers", bootstrap)
    timeout_ms = config.get_int(consumer_prefix + BOOTSTRAP_TIMEOUT, DEFAULT_BOOTSTRAP_TIMEOUT_MS)
    timeout_ms = config.get_int(producer_prefix + BOOTSTRAP_TIMEOUT, timeout_ms) or DEFAULT_BOOTSTRAP_TIMEOUT_MS
    for conf, defaults in ((consumer, CONSUMER_DEFAULTS), (producer, PRODUCER_DEFAULTS)):
        for key, value in defaults.items():
            conf.setdefault(key, value)
    consumer["enable.auto.commit"] = False
    consumer.setdefault("group.id", f"samza-{system}-assigned")  # never joined: partitions are assigned
    if "fetch.max.bytes" in consumer and "message.max.bytes" not in consumer:
        # librdkafka refuses a fetch limit below its largest-message limit (Java clients do not)
        consumer["message.max.bytes"] = min(1_000_000, int(consumer["fetch.max.bytes"]))
    # a broker that does not answer fails a request in this long, not librdkafka's minute (within
    # the range librdkafka accepts, whatever bootstrap.timeout.ms says)
    consumer.setdefault("socket.timeout.ms", min(max(timeout_ms, 10_000), 300_000))
    timeouts = producer_timeouts(system, config, PRODUCER_DEFAULTS["linger.ms"])
    if "delivery.timeout.ms" not in producer:  # librdkafka's alias of message.timeout.ms
        producer.setdefault("message.timeout.ms", timeouts.delivery_timeout_ms or DEFAULT_DELIVERY_TIMEOUT_MS)
    if timeouts.request_timeout_ms is not None:
        producer["request.timeout.ms"] = timeouts.request_timeout_ms
    logger = logging.getLogger(f"{LIBRDKAFKA_LOGGER}.{system}")
    consumer["logger"] = producer["logger"] = logger
    return ConfluentConfigs(
        system, consumer, producer, consumer_sources, producer_sources, str(bootstrap), timeout_ms / 1000
    )


def _translate(subset: Config, prefix: str, sources: dict[str, str]) -> dict[str, Any]:
    what = prefix.rstrip(".").rsplit(".", 1)[-1]  # consumer | producer
    out: dict[str, Any] = {}
    for dotted, raw in subset.items():
        full_key = prefix + dotted
        value = raw.strip()
        if dotted == BOOTSTRAP_TIMEOUT:
            continue
        if dotted in IGNORED:
            log.warning("ignoring %s: librdkafka (the confluent client) has no such setting", full_key)
            continue
        if what == "producer" and dotted == "batch.size" and value == "0":
            # Java's "no batching": one message per request
            out["batch.num.messages"], out["linger.ms"] = "1", "0"
            sources["batch.num.messages"] = sources["linger.ms"] = full_key
            continue
        if dotted in (HOSTNAME_CHECK, HOSTNAME_ALGORITHM):
            if value.lower() not in _ALGORITHMS or (dotted == HOSTNAME_CHECK) != (value.lower() in ("true", "false")):
                expected = "true or false" if dotted == HOSTNAME_CHECK else "https or none"
                raise ConfigError(f"config key {full_key!r} must be {expected}, got {value!r}", key=full_key)
            out[HOSTNAME_ALGORITHM] = _ALGORITHMS[value.lower()]
            sources[HOSTNAME_ALGORITHM] = full_key
            continue
        name = TRANSLATED.get(f"{dotted}@{what}") or TRANSLATED.get(dotted, dotted)
        if name in PYTHON_BOOLEANS:  # read by confluent-kafka itself, which wants a bool
            if value.lower() not in ("true", "false"):
                raise ConfigError(f"config key {full_key!r} must be true or false, got {value!r}", key=full_key)
            out[name] = value.lower() == "true"
            sources[name] = full_key
            continue
        out[name] = value
        sources[name] = full_key
    return out


def config_error(exc: BaseException, sources: dict[str, str], what: str) -> ConfigError | None:
    """The ConfigError naming the full key of a setting librdkafka rejected, or None when
    ``exc`` is not about a setting."""
    text = str(exc)
    for marker in ("No such configuration property: ", "Invalid value", "Configuration property "):
        if marker in text:
            name = next((n for n in sources if f'"{n}"' in text), None)
            anywhere = keys.prefix(_CLIENT_KEYS[what], system="*") + "*"  # the client's namespace, any system
            key = sources.get(name, anywhere) if name else anywhere
            return ConfigError(
                f"config key {key!r}: librdkafka (kafka.client=confluent) refused it: {_reason(text)}", key=key
            )
    return None


def _reason(text: str) -> str:
    start = text.find('str="')
    return text[start + 5 : text.rfind('"')] if start >= 0 else text
