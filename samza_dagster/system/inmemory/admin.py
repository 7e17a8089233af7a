"""SystemAdmin of the in-memory system."""

from __future__ import annotations

from collections.abc import Iterable

from samza_dagster.model import (
    StreamSpec,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.errors import InvalidStreamError, StreamExistsError
from samza_dagster.system.inmemory.state import InMemoryStream, system_state
from samza_dagster.system.int_offsets import compare_int_offsets, offsets_after


def partition_metadata(length: int) -> SystemStreamPartitionMetadata:
    """Metadata of a partition holding offsets 0..length-1."""
    return SystemStreamPartitionMetadata("0", str(length - 1) if length else None, str(length))


class InMemorySystemAdmin:
    def __init__(self, system_name: str) -> None:
        self.system_name = system_name
        self._state = system_state(system_name)

    def create_stream(self, spec: StreamSpec) -> bool:
        """Create the stream; False if it exists with the same partition count."""
        if spec.partition_count < 1:
            raise InvalidStreamError(
                f"stream {spec.physical_name!r} on system {self.system_name!r}: "
                f"partition count must be at least 1, got {spec.partition_count}"
            )
        with self._state.condition:
            existing = self._state.streams.get(spec.physical_name)
            if existing is not None:
                if len(existing.partitions) != spec.partition_count:
                    raise StreamExistsError(
                        f"stream {spec.physical_name!r} on system {self.system_name!r} exists with "
                        f"{len(existing.partitions)} partitions; asked to create it with {spec.partition_count}"
                    )
                return False
            self._state.streams[spec.physical_name] = InMemoryStream(
                spec.physical_name, spec.partition_count, spec.config
            )
            return True

    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        result: dict[str, SystemStreamMetadata] = {}
        with self._state.condition:
            for name in stream_names:
                stream = self._state.stream(name)
                result[name] = SystemStreamMetadata(
                    name, {p: partition_metadata(len(records)) for p, records in enumerate(stream.partitions)}
                )
        return result

    #: dense integer offsets; the very function, so the bootstrapping chooser can see it
    #: compares integers and skip the call per envelope
    offset_comparator = staticmethod(compare_int_offsets)

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        return offsets_after(offsets)

    def list_streams(self) -> list[str]:
        with self._state.condition:
            return sorted(self._state.streams)

    def stream_exists(self, stream: str) -> bool:
        with self._state.condition:
            return stream in self._state.streams
