"""SystemAdmin of the log system: stream creation and batched offset metadata."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from samza_dagster.config.config import Config
from samza_dagster.system.int_offsets import compare_int_offsets, offsets_after
from samza_dagster.system.log import storage
from samza_dagster.system.log.config import LogSystemConfig
from samza_dagster.model import (
    StreamSpec,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)


class LogSystemAdmin:
    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.log_config = LogSystemConfig.from_config(system_name, config)
        self._lock = threading.Lock()
        # stream -> (connection, partition count); a stream's partition count never changes
        self._streams: dict[str, tuple[storage.StreamConnection, int]] = {}

    @property
    def root(self) -> str:
        return self.log_config.path

    def create_stream(self, spec: StreamSpec) -> bool:
        """Create the stream's file; False if it exists with the same partition count,
        StreamExistsError naming both counts if it exists with another."""
        return storage.create_stream_file(
            self.system_name, self.root, spec.physical_name, spec.partition_count, spec.config
        )

    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        """One statement per stream file gives every partition's oldest and newest offset."""
        result: dict[str, SystemStreamMetadata] = {}
        with self._lock:
            for name in stream_names:
                conn, count = self._stream(name)
                partitions: dict[int, SystemStreamPartitionMetadata] = {}
                for partition, oldest, newest in conn.log_format.bounds(conn, count):
                    if newest is None:
                        partitions[partition] = SystemStreamPartitionMetadata("0", None, "0")
                    else:
                        partitions[partition] = SystemStreamPartitionMetadata(str(oldest), str(newest), str(newest + 1))
                result[name] = SystemStreamMetadata(name, partitions)
        return result

    def partition_count(self, stream: str) -> int:
        with self._lock:
            return self._stream(stream)[1]

    #: dense integer offsets; the very function, so the bootstrapping chooser can see it
    #: compares integers and skip the call per envelope
    offset_comparator = staticmethod(compare_int_offsets)

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        return offsets_after(offsets)

    def list_streams(self) -> list[str]:
        return storage.list_stream_names(self.root)

    def stream_exists(self, stream: str) -> bool:
        return os.path.exists(storage.stream_file(self.root, stream))

    def stop(self) -> None:
        with self._lock:
            for conn, _ in self._streams.values():
                conn.close()
            self._streams.clear()

    def _stream(self, name: str) -> tuple[storage.StreamConnection, int]:
        found = self._streams.get(name)
        if found is None:
            cfg = self.log_config
            found = storage.open_stream(self.system_name, cfg.path, name, cfg.synchronous, cfg.busy_timeout_s)
            self._streams[name] = found
        return found
