"""SystemAdmin of the log system: stream creation and batched offset metadata."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable

from samza_dagster.config.config import Config
from samza_dagster.model import (
    StreamSpec,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.errors import PartitionError, StreamNotFoundError
from samza_dagster.system.int_offsets import compare_int_offsets, offsets_after
from samza_dagster.system.log import retention, storage, time_index
from samza_dagster.system.log.cleaner import CleanStats, clean_stream, read_policy
from samza_dagster.system.log.config import LogSystemConfig


class LogSystemAdmin:
    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.log_config = LogSystemConfig.from_config(system_name, config)
        self._config = config
        self._lock = threading.Lock()
        # stream -> (connection, partition count); a stream's partition count never changes
        self._streams: dict[str, tuple[storage.StreamConnection, int]] = {}

    @property
    def root(self) -> str:
        return self.log_config.path

    def create_stream(self, spec: StreamSpec) -> bool:
        """Create the stream's file; False if it exists with the same partition count,
        StreamExistsError naming both counts if it exists with another. The file keeps the
        stream's properties with its cleanup policy resolved from config (retention.py;
        ConfigError naming a bad key); an existing file keeps the policy it was created with."""
        properties = retention.stream_properties(self._config, self.system_name, spec.physical_name, spec.config)
        policy = retention.CleanupPolicy.from_properties(
            properties, f"stream {self.system_name}.{spec.physical_name}: "
        )
        return storage.create_stream_file(
            self.system_name, self.root, spec.physical_name, spec.partition_count, properties, reclaim=policy.cleans
        )

    def clean_stream(self, stream: str, now_ms: int | None = None) -> CleanStats:
        """One cleaning pass over every partition of ``stream`` now, by its stored policy (the
        producers' cleaners do this in the background; this is for tools and tests)."""
        with self._lock:
            conn, count = self._stream(stream)
            return clean_stream(conn, range(count), read_policy(conn, stream), now_ms)

    def cleanup_policy(self, stream: str) -> str:
        """The stream's stored ``cleanup.policy`` (what may have removed messages from it)."""
        with self._lock:
            conn, _count = self._stream(stream)
            policy = read_policy(conn, stream)
        return ",".join(name for name, on in (("compact", policy.compact), ("delete", policy.delete)) if on)

    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        """One statement per stream file gives every partition's oldest and newest offset."""
        result: dict[str, SystemStreamMetadata] = {}
        with self._lock:
            for name in stream_names:
                conn, count = self._stream(name)
                partitions: dict[int, SystemStreamPartitionMetadata] = {}
                for partition, oldest, newest, upcoming in conn.log_format.partition_offsets(conn, count):
                    partitions[partition] = SystemStreamPartitionMetadata(
                        str(oldest), None if newest is None else str(newest), str(upcoming)
                    )
                result[name] = SystemStreamMetadata(name, partitions)
        return result

    def get_ssp_metadata(
        self, ssps: Iterable[SystemStreamPartition]
    ) -> dict[SystemStreamPartition, SystemStreamPartitionMetadata]:
        """Samza's ``getSSPMetadata``: the offsets of the given partitions only — per stream one
        statement over the asked partitions (two b-tree seeks each), so asking for one partition
        of a 1,024-partition stream costs one partition, not 1,024. A partition the stream does
        not have is left out."""
        by_stream: dict[str, list[SystemStreamPartition]] = {}
        for ssp in ssps:
            by_stream.setdefault(ssp.stream, []).append(ssp)
        result: dict[SystemStreamPartition, SystemStreamPartitionMetadata] = {}
        with self._lock:
            for name, wanted in by_stream.items():
                conn, count = self._stream(name)
                asked = {ssp.partition: ssp for ssp in wanted if 0 <= ssp.partition < count}
                for partition, oldest, newest, upcoming in conn.log_format.partition_offsets(conn, count, asked):
                    result[asked[partition]] = SystemStreamPartitionMetadata(
                        str(oldest), None if newest is None else str(newest), str(upcoming)
                    )
        return result

    def partition_count(self, stream: str) -> int:
        with self._lock:
            return self._stream(stream)[1]

    #: dense integer offsets; the very function, so the bootstrapping chooser can see it
    #: compares integers and skip the call per envelope
    offset_comparator = staticmethod(compare_int_offsets)

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        return offsets_after(offsets)

    def offsets_for_times(
        self, timestamps: dict[SystemStreamPartition, int]
    ) -> dict[SystemStreamPartition, str | None]:
        """Kafka's ``offsetsForTimes``: per partition, the earliest offset whose message timestamp
        (ms) is at or after the given one; None when no message is. Indexed (time_index.py)."""
        result: dict[SystemStreamPartition, str | None] = {}
        with self._lock:
            for ssp, ts in timestamps.items():
                conn, count = self._stream(ssp.stream)
                if not 0 <= ssp.partition < count:
                    raise PartitionError(
                        f"log system {self.system_name!r}: stream {ssp.stream!r} has no partition {ssp.partition} "
                        f"(it has {count})"
                    )
                ((_, oldest, newest),) = conn.log_format.bounds_of(conn, [ssp.partition])
                found = time_index.offset_for_time(conn, ssp.partition, int(ts), oldest, newest)
                result[ssp] = None if found is None else str(found)
        return result

    def list_streams(self) -> list[str]:
        return storage.list_stream_names(self.root)

    def stream_exists(self, stream: str) -> bool:
        return os.path.exists(storage.stream_file(self.root, stream))

    def delete_stream(self, stream: str) -> None:
        """Remove the stream's file (with its WAL): its messages, offsets and properties are gone,
        and a stream of that name can be created again. StreamNotFoundError when there is none.
        A process that has the file open keeps writing to the removed file: stop the jobs that
        read or write the stream first."""
        path = storage.stream_file(self.root, stream)
        if not os.path.exists(path):
            raise StreamNotFoundError(self.system_name, stream, f"no file {path}")
        with self._lock:
            found = self._streams.pop(stream, None)
            if found is not None:
                found[0].close()
            for name in (path, path + "-wal", path + "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(name)

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
