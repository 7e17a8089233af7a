"""Samza-style Kafka system config → kafka-python keyword arguments, and the choice of client.

``systems.<s>.kafka.client`` picks the consumer and producer: ``confluent`` (librdkafka, the
default; see :mod:`.confluent_config`) or ``kafka-python``. The admin is kafka-python's either way.

``systems.<s>.consumer.*`` and ``systems.<s>.producer.*`` keys are passed through to
kafka-python's ``KafkaConsumer`` / ``KafkaProducer`` with ``a.b.c`` renamed ``a_b_c`` and the
value converted to the type kafka-python expects (decided from the client's own
``DEFAULT_CONFIG``, so a key kafka-python grows later converts without a change here).
A key kafka-python does not know fails with a :class:`ConfigError` naming the full config key,
instead of kafka-python's ``Unrecognized configs`` naming the Python spelling.

The admin client has no key space of its own in Samza: it connects with the consumer's
connection settings (bootstrap servers, security, SASL/SSL), overridable with
``systems.<s>.admin.*``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.secrets import secrets_of
from samza_dagster.system.kafka import kafka_python_fixes
from samza_dagster.system.kafka.timeouts import producer_timeouts

log = logging.getLogger(__name__)

#: Defaults applied unless the user sets the key (in kafka-python spelling).
#: ``bootstrap_timeout_ms`` is what makes an unreachable broker fail in seconds, not 30 s;
#: metrics are off because kafka-python records sensors per fetched record (hot path).
_COMMON_DEFAULTS: dict[str, Any] = {"bootstrap_timeout_ms": 5000}
CONSUMER_DEFAULTS: dict[str, Any] = {
    **_COMMON_DEFAULTS,
    "enable_auto_commit": False,  # offsets live in Samza checkpoints, not in Kafka groups
    "allow_auto_create_topics": False,  # reading a missing topic is an error, not a creation
    "metrics_enabled": False,
    "request_timeout_ms": 10000,
}
PRODUCER_DEFAULTS: dict[str, Any] = {
    **_COMMON_DEFAULTS,
    "allow_auto_create_topics": False,  # streams are created by the planner with their specs
    "metrics_enabled": False,
    "linger_ms": 5,  # lets kafka-python fill batches; flush() at commit bounds the latency
    "max_block_ms": 10000,  # metadata waits / full buffers fail in 10 s instead of 60 s
}
ADMIN_DEFAULTS: dict[str, Any] = {**_COMMON_DEFAULTS, "request_timeout_ms": 10000}

#: Keys of Samza's Java Kafka configs that mean nothing to kafka-python; ignored with a warning
#: so configs ported from Samza keep working.
_IGNORED_JAVA_KEYS = frozenset(
    {"zookeeper.connect", "key.serializer", "value.serializer", "key.deserializer", "value.deserializer"}
)

#: Keys whose kafka-python default is None but whose value is an integer.
_INT_WHEN_NONE = frozenset({"receive_buffer_bytes", "send_buffer_bytes"})

#: librdkafka spellings → kafka-python's, so one config works with either client
_KAFKA_PYTHON_NAMES = {
    "sasl.mechanisms": "sasl.mechanism",
    "sasl.username": "sasl.plain.username",
    "sasl.password": "sasl.plain.password",
    "ssl.ca.location": "ssl.cafile",
    "ssl.certificate.location": "ssl.certfile",
    "ssl.key.location": "ssl.keyfile",
    "ssl.key.password": "ssl.password",
    "ssl.endpoint.identification.algorithm": "ssl.check.hostname",
}
#: Java's and librdkafka's hostname verification (``https``; ``none`` or empty for none) as
#: kafka-python's ``ssl_check_hostname``
_HOSTNAME_ALGORITHM = "ssl.endpoint.identification.algorithm"
_HOSTNAME_CHECKS = {"https": "true", "none": "false", "": "false"}

#: Samza (old Kafka consumer) spellings of auto.offset.reset.
_OFFSET_RESET = {"smallest": "earliest", "largest": "latest"}


CLIENTS = ("confluent", "kafka-python")
DEFAULT_CLIENT: str = keys.SYSTEM_KAFKA_CLIENT.default


def kafka_client(system: str, config: Config) -> str:
    """``systems.<system>.kafka.client``: confluent (default) or kafka-python."""
    key = keys.SYSTEM_KAFKA_CLIENT.key(system=system)
    name = (config.get_str(key) or DEFAULT_CLIENT).strip()
    if name not in CLIENTS:
        raise ConfigError(f"config key {key!r} must be one of {', '.join(CLIENTS)}, got {name!r}", key=key)
    return name


@dataclass(frozen=True)
class KafkaClientConfigs:
    """kafka-python keyword arguments of the three clients of one system."""

    system: str
    consumer: dict[str, Any]
    producer: dict[str, Any]
    admin: dict[str, Any]

    @property
    def bootstrap_servers(self) -> str:
        return str(self.consumer.get("bootstrap_servers") or self.producer.get("bootstrap_servers"))


def kafka_client_configs(system: str, config: Config) -> KafkaClientConfigs:
    """Build the kwargs of the consumer, producer and admin of ``system``.

    Raises ConfigError when neither ``consumer.bootstrap.servers`` nor
    ``producer.bootstrap.servers`` is set (each falls back to the other). With the confluent
    client the consumer and producer keys are librdkafka's to check; here only those kafka-python
    knows are kept (for the admin, which connects like the consumer).
    """
    # kafka-python loads only when a Kafka system uses it (kafka.client picks the client library)
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

    # kafka-python's DEBUG records show its settings and the bytes it moves (the coordinator
    # stream holds the whole config): every secret of this config is masked in them
    kafka_python_fixes.mask_in_logs(secrets_of(config).values())
    consumer_prefix = keys.prefix(keys.SYSTEM_CONSUMER_KEYS, system=system)
    producer_prefix = keys.prefix(keys.SYSTEM_PRODUCER_KEYS, system=system)
    strict = kafka_client(system, config) == "kafka-python"
    consumer = _convert(config.subset(consumer_prefix), KafkaConsumer.DEFAULT_CONFIG, consumer_prefix, strict)
    producer = _convert(config.subset(producer_prefix), KafkaProducer.DEFAULT_CONFIG, producer_prefix, strict)
    bootstrap = consumer.get("bootstrap_servers") or producer.get("bootstrap_servers")
    if not bootstrap:
        key = consumer_prefix + "bootstrap.servers"
        raise ConfigError(f"Kafka system {system!r} needs {key!r} (or {producer_prefix}bootstrap.servers)", key=key)
    consumer.setdefault("bootstrap_servers", bootstrap)
    producer.setdefault("bootstrap_servers", producer.get("bootstrap_servers") or bootstrap)

    # The admin connects like the consumer: same servers, security and timeouts.
    admin_defaults = KafkaAdminClient.DEFAULT_CONFIG
    admin = {k: v for k, v in consumer.items() if k in admin_defaults}
    admin_prefix = keys.prefix(keys.SYSTEM_ADMIN_KEYS, system=system)
    admin.update(_convert(config.subset(admin_prefix), admin_defaults, admin_prefix))

    for role, kwargs, defaults in (
        ("consumer", consumer, CONSUMER_DEFAULTS),
        ("producer", producer, PRODUCER_DEFAULTS),
        ("admin", admin, ADMIN_DEFAULTS),
    ):
        for key, value in defaults.items():
            kwargs.setdefault(key, value)
        # names the client to the brokers (their logs, quotas) and its IO thread, by which a
        # failed connection's cause is found again (kafka_python_fixes.recent_failures)
        kwargs.setdefault("client_id", f"samza-dagster-{system}-{role}")
    timeouts = producer_timeouts(system, config, PRODUCER_DEFAULTS["linger_ms"])
    if timeouts.delivery_timeout_ms is not None:
        producer.setdefault("delivery_timeout_ms", timeouts.delivery_timeout_ms)
    if timeouts.request_timeout_ms is not None:
        producer.setdefault("request_timeout_ms", timeouts.request_timeout_ms)
    if keys.JOB_PROCESSING_GUARANTEE.get(config) == "exactly-once":
        # as Kafka Streams sets it (librdkafka's default already): an exactly-once job reads what
        # other exactly-once jobs committed, never their open or aborted transactions
        consumer.setdefault("isolation_level", "read_committed")
    consumer["enable_auto_commit"] = False  # never commit to a Kafka group: Samza checkpoints
    consumer.pop("group_id", None)  # partitions come from the job model: no group, no rebalance
    return KafkaClientConfigs(system=system, consumer=consumer, producer=producer, admin=admin)


def _convert(subset: Config, defaults: dict[str, Any], prefix: str, strict: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, raw in subset.items():
        full_key = prefix + dotted
        if dotted in _IGNORED_JAVA_KEYS:
            if strict:
                log.warning("ignoring %s: a Java Kafka client setting kafka-python has no use for", full_key)
            continue
        if dotted == _HOSTNAME_ALGORITHM:
            if raw.strip().lower() not in _HOSTNAME_CHECKS:
                raise ConfigError(f"config key {full_key!r} must be https or none, got {raw.strip()!r}", key=full_key)
            raw = _HOSTNAME_CHECKS[raw.strip().lower()]
        name = _KAFKA_PYTHON_NAMES.get(dotted, dotted).replace(".", "_").replace("-", "_")
        if name not in defaults:
            if not strict:
                continue
            raise ConfigError(
                f"config key {full_key!r} is not a kafka-python setting ({name!r} unknown to this client)",
                key=full_key,
            )
        out[name] = _convert_value(name, raw.strip(), defaults[name], full_key)
    return out


def _convert_value(name: str, raw: str, default: Any, full_key: str) -> Any:
    try:
        if name == "acks":
            return -1 if raw.lower() == "all" else int(raw)
        if name == "api_version":
            return tuple(int(part) for part in raw.split("."))
        if name == "auto_offset_reset":
            return _OFFSET_RESET.get(raw, raw)
        if isinstance(default, bool):
            lowered = raw.lower()
            if lowered in ("true", "false"):
                return lowered == "true"
            raise ValueError(raw)
        if isinstance(default, int) or name in _INT_WHEN_NONE:
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        expected = "true or false" if isinstance(default, bool) else "a number"
        raise ConfigError(f"config key {full_key!r} must be {expected}, got {raw!r}", key=full_key) from None
    if default is not None and not isinstance(default, str):
        # Callables, classes, lists of socket options: not expressible in a .properties file.
        raise ConfigError(
            f"config key {full_key!r} sets kafka-python's {name!r}, which takes a Python object, not a string",
            key=full_key,
        )
    return raw
