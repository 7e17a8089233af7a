"""CoordinatorStreamResource: read a job's coordinator stream from an offset, write set-config.

The stream's location (system, ``__samza_coordinator_<job>_<id>``) comes from the job's config;
the system's whereabouts from the nested :class:`SamzaSystemsResource`, so a sensor and the job
it triggers agree on where the stream is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamReader, CoordinatorStreamWriter
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.orchestration.resources.systems import SamzaSystemsResource

log = logging.getLogger(__name__)


class CoordinatorStreamResource(dg.ConfigurableResource):
    systems: SamzaSystemsResource

    def job_config(self, config: Mapping[str, object]) -> Config:
        return self.systems.apply(config)

    def read(
        self, config: Mapping[str, object], from_offset: str | None = None
    ) -> tuple[list[tuple[str, CoordinatorStreamMessage]], str]:
        """Messages from ``from_offset`` (the oldest when None) up to the head, with their
        offsets, and the offset to read from next. Undecodable messages are skipped by the
        reader with a warning naming their offset. Raises ``StreamNotFoundError`` when the job
        has no coordinator stream yet."""
        with CoordinatorStreamReader(self.job_config(config)) as reader:
            return reader.read(from_offset)

    def read_state(self, config: Mapping[str, object]) -> CoordinatorStreamState:
        """The whole stream folded (last message per type and key wins)."""
        with CoordinatorStreamReader(self.job_config(config)) as reader:
            state, _ = reader.read_state()
        return state

    def set_config(self, config: Mapping[str, object], key: str, value: str, *, force_reset: bool = False) -> None:
        """As ``samza-dagster coordinator-stream-writer --type set-config``: set-once keys of a
        stateful job are refused unless ``force_reset``."""
        wrote = run_coordinator_stream_writer(
            self.job_config(config), "set-config", key, value, force_reset=force_reset
        )
        log.info("%s", wrote.line)
        if wrote.warning:
            log.warning("%s", wrote.warning)

    def write(self, config: Mapping[str, object], *messages: CoordinatorStreamMessage, source: str = "dagster") -> None:
        """Append raw coordinator messages (no set-once checks)."""
        with CoordinatorStreamWriter(self.job_config(config), source) as writer:
            writer.send(*messages)
