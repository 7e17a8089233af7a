"""The System* protocols every system (log, kafka, inmemory, user's) implements."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from samza_dagster.config.config import Config
from samza_dagster.model import (
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStreamMetadata,
    SystemStreamPartition,
)


@runtime_checkable
class SystemAdmin(Protocol):
    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        """Metadata for every partition of every named stream, in one batched lookup.

        Raises StreamNotFoundError for a stream that does not exist."""
        ...

    def create_stream(self, spec: StreamSpec) -> bool:
        """Create the stream; False if it already existed with the same partition count."""
        ...

    def offset_comparator(self, offset1: str, offset2: str) -> int:
        """Negative, zero or positive as offset1 is before, at or after offset2."""
        ...

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        """The offset of the message after each given one (used to resume after a checkpoint)."""
        ...


@runtime_checkable
class SystemConsumer(Protocol):
    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        """Read ``ssp`` starting at ``offset`` (the offset of the first message to read)."""
        ...

    def start(self) -> None: ...

    def poll(
        self, ssps: Iterable[SystemStreamPartition], timeout_s: float
    ) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        """Envelopes available for the given SSPs, blocking up to ``timeout_s`` when there
        are none (without spinning). A bounded partition's last envelope is followed by
        its end-of-stream envelope."""
        ...

    def stop(self) -> None: ...


@runtime_checkable
class SystemProducer(Protocol):
    def register(self, source: str) -> None: ...

    def start(self) -> None: ...

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None: ...

    def flush(self, source: str) -> None:
        """Block until everything ``source`` sent is durable on the system."""
        ...

    def stop(self) -> None: ...


@runtime_checkable
class SystemFactory(Protocol):
    def get_admin(self, system_name: str, config: Config) -> SystemAdmin: ...

    def get_consumer(self, system_name: str, config: Config) -> SystemConsumer: ...

    def get_producer(self, system_name: str, config: Config) -> SystemProducer: ...
