"""SamzaSystemsResource: the deployment's systems as a samza config fragment.

A job's .properties describes the application (inputs, serdes, stores); *where* the systems are
— the embedded log's root directory, the Kafka brokers — belongs to the deployment, so it comes
from this resource and wins over the .properties for the system names the resource owns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import dagster as dg

from samza_dagster.config import Config

LOG_PATH_ENV = "SAMZA_LOG_PATH"
KAFKA_BOOTSTRAP_ENV = "SAMZA_KAFKA_BOOTSTRAP_SERVERS"
DEFAULT_LOG_PATH = "./.samza-log"


class SamzaSystemsResource(dg.ConfigurableResource):
    """Where the systems are.

    ``log_path`` — root directory of the embedded log (system ``log_system``); unset means the
    ``SAMZA_LOG_PATH`` environment variable at the time of use, else ``./.samza-log``.
    ``kafka_bootstrap_servers`` — when set (or ``SAMZA_KAFKA_BOOTSTRAP_SERVERS``), system
    ``kafka_system`` is a Kafka system on those brokers.
    ``kafka_bootstrap_timeout_ms`` — how long a client waits for an unreachable broker before
    failing with its address (kafka-python's ``bootstrap_timeout_ms``).
    """

    log_path: str | None = None
    log_system: str = "log"
    kafka_bootstrap_servers: str | None = None
    kafka_system: str = "kafka"
    kafka_bootstrap_timeout_ms: int = 5000

    def resolved_log_path(self) -> str:
        return os.path.abspath(self.log_path or os.environ.get(LOG_PATH_ENV) or DEFAULT_LOG_PATH)

    def resolved_kafka_bootstrap_servers(self) -> str | None:
        return self.kafka_bootstrap_servers or os.environ.get(KAFKA_BOOTSTRAP_ENV) or None

    def config_fragment(self) -> dict[str, str]:
        """``systems.*`` keys of the systems this resource describes."""
        log = f"systems.{self.log_system}."
        fragment = {log + "samza.factory": "log", log + "log.path": self.resolved_log_path()}
        servers = self.resolved_kafka_bootstrap_servers()
        if servers:
            kafka = f"systems.{self.kafka_system}."
            timeout = str(self.kafka_bootstrap_timeout_ms)
            fragment.update(
                {
                    kafka + "samza.factory": "kafka",
                    kafka + "consumer.bootstrap.servers": servers,
                    kafka + "producer.bootstrap.servers": servers,
                    kafka + "consumer.bootstrap.timeout.ms": timeout,
                    kafka + "producer.bootstrap.timeout.ms": timeout,
                }
            )
        return fragment

    def apply(self, config: Mapping[str, object]) -> Config:
        """``config`` with this resource's system keys on top (the deployment wins)."""
        base = config if isinstance(config, Config) else Config(config)
        return base.with_overrides(self.config_fragment())
