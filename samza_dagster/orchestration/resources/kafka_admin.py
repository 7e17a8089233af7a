"""KafkaAdminResource: offsets, creation and description of Kafka streams through the Kafka
system's own admin, so Dagster sees exactly what a job sees.

Every lookup is batched: all partitions of all the named streams in one metadata request and
one ListOffsets round per bound (see ``samza_dagster.system.kafka.admin``). An unreachable
broker fails within ``bootstrap_timeout_ms`` with ``SystemUnavailableError`` naming the address.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg
from pydantic import Field

from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.model import StreamSpec, SystemStreamMetadata
from samza_dagster.orchestration.observation import system_admin

KAFKA_BOOTSTRAP_ENV = "SAMZA_KAFKA_BOOTSTRAP_SERVERS"


class KafkaAdminResource(dg.ConfigurableResource):
    """Admin operations on one Kafka system.

    ``bootstrap_servers`` — ``host:port[,host:port]``; unset means ``SAMZA_KAFKA_BOOTSTRAP_SERVERS``.
    """

    bootstrap_servers: str | None = Field(
        default=None, description="host:port[,host:port] of the brokers; unset: SAMZA_KAFKA_BOOTSTRAP_SERVERS"
    )
    system_name: str = Field(default="kafka", description="the Kafka system's name in the jobs' config")
    bootstrap_timeout_ms: int = Field(
        default=5000, description="how long to wait for an unreachable broker before failing with its address"
    )
    request_timeout_ms: int = Field(default=10000, description="timeout of one admin request to the brokers")

    def resolved_bootstrap_servers(self) -> str:
        servers = self.bootstrap_servers or os.environ.get(KAFKA_BOOTSTRAP_ENV)
        if not servers:
            raise ConfigError(
                f"KafkaAdminResource: set bootstrap_servers or the {KAFKA_BOOTSTRAP_ENV} environment variable",
                key="bootstrap_servers",
            )
        return servers

    def system_config(self) -> Config:
        system = self.system_name
        servers = self.resolved_bootstrap_servers()
        admin = keys.prefix(keys.SYSTEM_ADMIN_KEYS, system=system)  # the Kafka admin client's own settings
        return Config(
            {
                keys.SYSTEM_FACTORY.key(system=system): "kafka",
                keys.prefix(keys.SYSTEM_CONSUMER_KEYS, system=system) + "bootstrap.servers": servers,
                admin + "bootstrap.timeout.ms": str(self.bootstrap_timeout_ms),
                admin + "request.timeout.ms": str(self.request_timeout_ms),
            }
        )

    @contextmanager
    def admin(self) -> Iterator[Any]:
        """The Kafka system's admin, closed afterwards."""
        with system_admin(self.system_config(), self.system_name) as admin:
            yield admin

    def stream_metadata(self, streams: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        """Oldest/newest/upcoming offsets of every partition of ``streams`` (physical topic
        names), one batched lookup."""
        names = list(dict.fromkeys(streams))
        if not names:
            return {}
        with self.admin() as admin:
            return admin.get_system_stream_metadata(names)

    def newest_offsets(self, streams: Iterable[str]) -> dict[str, dict[int, str | None]]:
        """stream → partition → offset of the last message (None for an empty partition)."""
        return {
            name: {p: m.newest_offset for p, m in md.partitions.items()}
            for name, md in self.stream_metadata(streams).items()
        }

    def upcoming_offsets(self, streams: Iterable[str]) -> dict[str, dict[int, str]]:
        """stream → partition → offset the next message will get."""
        return {
            name: {p: m.upcoming_offset for p, m in md.partitions.items()}
            for name, md in self.stream_metadata(streams).items()
        }

    def create_stream(self, name: str, partitions: int, configs: Mapping[str, str] | None = None) -> bool:
        """Create topic ``name``; False if it exists with that partition count (a different
        count raises ``StreamExistsError`` naming both)."""
        with self.admin() as admin:
            return bool(admin.create_stream(StreamSpec(name, name, self.system_name, partitions, dict(configs or {}))))

    def describe_streams(self, streams: Iterable[str]) -> dict[str, dict[str, Any]]:
        """A JSON-friendly description: partition count, per-partition offsets, total messages
        currently retained."""
        described: dict[str, dict[str, Any]] = {}
        for name, md in self.stream_metadata(streams).items():
            parts = {
                p: {"oldest": m.oldest_offset, "newest": m.newest_offset, "upcoming": m.upcoming_offset}
                for p, m in sorted(md.partitions.items())
            }
            retained = sum(int(m.upcoming_offset) - int(m.oldest_offset) for m in md.partitions.values())
            described[name] = {"partitions": len(parts), "offsets": parts, "messages": retained}
        return described
