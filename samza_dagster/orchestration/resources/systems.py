"""SamzaSystemsResource: the deployment's systems as a samza config fragment.

A job's .properties describes the application (inputs, serdes, stores); *where* the systems are
— the embedded log's root directory, the Kafka brokers — belongs to the deployment, so it comes
from this resource and wins over the .properties. Where the log lives follows the one rule of
:mod:`samza_dagster.config.deployment`, which the command line follows too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import dagster as dg
from pydantic import Field

from samza_dagster.config import Config, keys
from samza_dagster.config.deployment import apply_deployment, log_root

KAFKA_BOOTSTRAP_ENV = "SAMZA_KAFKA_BOOTSTRAP_SERVERS"
DEFAULT_KAFKA_SYSTEM = "kafka"
DEFAULT_KAFKA_BOOTSTRAP_TIMEOUT_MS = 5000


class SamzaSystemsResource(dg.ConfigurableResource):
    """Where the systems are.

    ``log_path`` — root directory of the embedded log, for every system whose factory is ``log``
    (a system named ``log`` with no factory is one); unset means ``SAMZA_LOG_PATH`` at the time
    of use, else the .properties' ``systems.<s>.log.path``, else ``./.samza-log``.
    ``kafka_bootstrap_servers`` — when set (or ``SAMZA_KAFKA_BOOTSTRAP_SERVERS``), system
    ``kafka_system`` (unset: ``kafka``) is a Kafka system on those brokers.
    ``kafka_bootstrap_timeout_ms`` — how long a client waits for an unreachable broker before
    failing with its address (kafka-python's ``bootstrap_timeout_ms``; unset: 5000).

    Every field defaults to unset (None), their defaults applied where they are read: the
    launchpad pre-fills fields that have a value, and a job on the embedded log should not open
    with Kafka settings in it.
    """

    log_path: str | None = Field(
        default=None,
        description="root directory of the embedded log; unset: SAMZA_LOG_PATH, else the config's "
        "systems.<s>.log.path, else ./.samza-log",
    )
    kafka_bootstrap_servers: str | None = Field(
        default=None,
        description="host:port[,host:port]: system kafka_system is a Kafka system on these brokers; "
        "unset: SAMZA_KAFKA_BOOTSTRAP_SERVERS, else as the config says",
    )
    kafka_system: str | None = Field(
        default=None, description=f"the system kafka_bootstrap_servers applies to; unset: {DEFAULT_KAFKA_SYSTEM}"
    )
    kafka_bootstrap_timeout_ms: int | None = Field(
        default=None,
        description="how long a client waits for an unreachable broker before failing with its address; "
        f"unset: {DEFAULT_KAFKA_BOOTSTRAP_TIMEOUT_MS}",
    )

    def resolved_log_path(self) -> str | None:
        """The log root this deployment names (absolute), or None to leave it to the .properties."""
        return log_root(self.log_path)

    def resolved_kafka_bootstrap_servers(self) -> str | None:
        return self.kafka_bootstrap_servers or os.environ.get(KAFKA_BOOTSTRAP_ENV) or None

    def kafka_fragment(self) -> dict[str, str]:
        """``systems.<kafka_system>.*`` keys when the deployment names brokers."""
        servers = self.resolved_kafka_bootstrap_servers()
        if not servers:
            return {}
        system = self.kafka_system or DEFAULT_KAFKA_SYSTEM
        consumer = keys.prefix(keys.SYSTEM_CONSUMER_KEYS, system=system)  # the Kafka clients' settings
        producer = keys.prefix(keys.SYSTEM_PRODUCER_KEYS, system=system)
        timeout_ms = self.kafka_bootstrap_timeout_ms
        timeout = str(DEFAULT_KAFKA_BOOTSTRAP_TIMEOUT_MS if timeout_ms is None else timeout_ms)
        return {
            keys.SYSTEM_FACTORY.key(system=system): "kafka",
            consumer + "bootstrap.servers": servers,
            producer + "bootstrap.servers": servers,
            keys.SYSTEM_BOOTSTRAP_TIMEOUT_MS.key(system=system): timeout,
            producer + "bootstrap.timeout.ms": timeout,  # the same definition's producer form
        }

    def apply(self, config: Mapping[str, object]) -> Config:
        """``config`` with this deployment's system keys on top (the deployment wins)."""
        base = config if isinstance(config, Config) else Config(config)
        kafka = self.kafka_fragment()
        return apply_deployment(base.with_overrides(kafka) if kafka else base, log_path=self.log_path)
