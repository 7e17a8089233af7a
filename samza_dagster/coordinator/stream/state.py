"""The folded view of a coordinator stream: what a compacted stream would hold."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from samza_dagster.coordinator.stream.messages import (
    SET_CHANGELOG,
    SET_CONFIG,
    SET_CONTAINER_HOST_ASSIGNMENT,
    SET_INPUT_PARTITIONS,
    CoordinatorStreamFormatError,
    CoordinatorStreamMessage,
)

log = logging.getLogger(__name__)


@dataclass
class CoordinatorStreamState:
    """Last message per (type, key) wins; a delete removes the entry.

    Types this code does not know are kept in ``other`` (another Samza tool may write them)
    rather than dropped, so they survive a fold and can be inspected.
    """

    config: dict[str, str] = field(default_factory=dict)
    changelog: dict[str, int] = field(default_factory=dict)
    host_assignments: dict[str, str] = field(default_factory=dict)
    #: ``<system>.<stream>`` → the partition count a stateful job's tasks were grouped on
    input_partitions: dict[str, int] = field(default_factory=dict)
    other: dict[tuple[str, str], CoordinatorStreamMessage] = field(default_factory=dict)

    def apply(self, message: CoordinatorStreamMessage, offset: str | None = None) -> None:
        """Fold one message in. A message whose values do not fit its type is skipped with a
        warning naming the offset (the stream is shared; one bad writer must not stop a job)."""
        msg_type, key = message.type, message.key
        if msg_type == SET_CONFIG:
            if message.is_delete:
                self.config.pop(key, None)
                return
            value = message.config_value
            if value is None:
                log.warning('skipping set-config %r at offset %s: no "value" in values', key, offset)
                return
            self.config[key] = value
        elif msg_type == SET_CHANGELOG:
            if message.is_delete:
                self.changelog.pop(key, None)
                return
            try:
                self.changelog[key] = message.changelog_partition
            except CoordinatorStreamFormatError as exc:
                log.warning("skipping coordinator stream message at offset %s: %s", offset, exc)
        elif msg_type == SET_CONTAINER_HOST_ASSIGNMENT:
            if message.is_delete:
                self.host_assignments.pop(key, None)
                return
            hostname = message.hostname
            if hostname is None:
                log.warning('skipping set-container-host-assignment %r at offset %s: no "host" in values', key, offset)
                return
            self.host_assignments[key] = hostname
        elif msg_type == SET_INPUT_PARTITIONS:
            if message.is_delete:
                self.input_partitions.pop(key, None)
                return
            try:
                self.input_partitions[key] = message.input_partitions
            except CoordinatorStreamFormatError as exc:
                log.warning("skipping coordinator stream message at offset %s: %s", offset, exc)
        else:
            if message.is_delete:
                self.other.pop((msg_type, key), None)
            else:
                self.other[(msg_type, key)] = message

    def apply_all(self, messages: Iterable[tuple[str, CoordinatorStreamMessage]]) -> None:
        for offset, message in messages:
            self.apply(message, offset)

    def copy(self) -> CoordinatorStreamState:
        return CoordinatorStreamState(
            dict(self.config),
            dict(self.changelog),
            dict(self.host_assignments),
            dict(self.input_partitions),
            dict(self.other),
        )
