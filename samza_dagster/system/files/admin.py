"""SystemAdmin of the files system: a stream's partitions and offsets from its directory.

A partition's oldest offset is ``<first file>:0``; its upcoming offset is ``<last file>:<rows>``
(the row after its last), its newest the row before that in the last file that has rows (None
when every file of the partition is empty). Offsets are ``<file>:<row>`` (offsets.py).
``create_stream`` makes the directory (an output's); a stream whose directory is absent does not
exist. ``list_streams`` gives the directories under the root (for "did you mean"), and
``explain_missing`` what a missing or empty input's error says: the directory looked in. A file
whose rows cannot be counted (a truncated Parquet file) is a config error naming its path and
the blacklist key that leaves it out: the job as configured cannot start.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow.fs as pafs

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import (
    ColumnarEnvelope,
    StreamSpec,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.errors import FileFormatError, OffsetError, PartitionError
from samza_dagster.system.files.offsets import FileOffset, compare_file_offsets, file_offsets_after, parse_file_offset
from samza_dagster.system.files.partitions import FileEntry
from samza_dagster.system.files.streams import FilesStreams
from samza_dagster.system.files.times import offset_for_time
from samza_dagster.system.protocols import PartitionFile


class FilesSystemAdmin:
    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.streams = FilesStreams(system_name, config)

    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        result: dict[str, SystemStreamMetadata] = {}
        for name in stream_names:
            partitions = self.streams.partitions(name)
            result[name] = SystemStreamMetadata(
                name, {p: self._partition_metadata(name, p, files) for p, files in enumerate(partitions)}
            )
        return result

    def _partition_metadata(self, stream: str, partition: int, files: list[FileEntry]) -> SystemStreamPartitionMetadata:
        last = files[-1]
        rows = self._row_count(stream, partition, last)
        newest: str | None = str(FileOffset(last.name, rows - 1)) if rows else None
        if newest is None:  # the newest row is in the last file that has any
            for entry in reversed(files[:-1]):
                count = self._row_count(stream, partition, entry)
                if count:
                    newest = str(FileOffset(entry.name, count - 1))
                    break
        return SystemStreamPartitionMetadata(
            str(FileOffset(files[0].name, 0)), newest, str(FileOffset(last.name, rows))
        )

    def offsets_for_times(
        self, timestamps: dict[SystemStreamPartition, int]
    ) -> dict[SystemStreamPartition, str | None]:
        """Per partition, the earliest offset whose time is at or after the timestamp (ms): by the
        files' modification times, or the stream's timestamp column (times.py); None: none is."""
        result: dict[SystemStreamPartition, str | None] = {}
        listed: dict[str, list[list[FileEntry]]] = {}
        for ssp, ts in timestamps.items():
            groups = listed.get(ssp.stream)
            if groups is None:
                groups = listed[ssp.stream] = self.streams.partitions(ssp.stream)
            if not 0 <= ssp.partition < len(groups):
                raise PartitionError(
                    f"{self.streams.where(ssp.stream)} has no partition {ssp.partition} (it has {len(groups)})"
                )
            result[ssp] = offset_for_time(self.streams, ssp.stream, ssp.partition, groups[ssp.partition], int(ts))
        return result

    def partition_files(self, stream: str) -> list[list[PartitionFile]]:
        """Per partition, its files in offset order with their rows and modification times."""
        return [
            [
                PartitionFile(entry.name, self._row_count(stream, p, entry), entry.size, entry.mtime_ns // 1_000_000)
                for entry in files
            ]
            for p, files in enumerate(self.streams.partitions(stream))
        ]

    def _row_count(self, stream: str, partition: int, entry: FileEntry) -> int:
        try:
            return self.streams.row_count(stream, entry)
        except FileFormatError as exc:
            raise self._unreadable(stream, partition, entry, exc) from exc

    def _unreadable(self, stream: str, partition: int, entry: FileEntry, exc: FileFormatError) -> ConfigError:
        """``files stream files.trips partition 1: /data/trips/part-1.parquet: not a Parquet file: ...
        — replace it, or leave it out with <blacklist key>=<its name>``."""
        text, named = str(exc), f"file {entry.name}"
        cause = text.split(named, 1)[1].lstrip(": ") if named in text else text
        return ConfigError(
            f"{self.streams.where(stream, partition)}: {entry.path}: {cause} — {self.streams.leave_out_hint(entry)}",
            key=keys.FILES_BLACKLIST.key(system=self.system_name),
        )

    def create_stream(self, spec: StreamSpec) -> bool:
        """The stream's directory (the partition count does not apply: files make partitions)."""
        root = self.streams.root
        directory = root.join(spec.physical_name)
        if root.fs.get_file_info(directory).type == pafs.FileType.Directory:
            return False
        root.fs.create_dir(directory, recursive=True)
        return True

    def list_streams(self) -> list[str]:
        """The stream directories under the root (none when the root does not exist)."""
        root = self.streams.root
        if root.fs.get_file_info(root.path).type != pafs.FileType.Directory:
            return []
        found = root.fs.get_file_info(pafs.FileSelector(root.path))
        return sorted(
            info.base_name
            for info in found
            if info.type == pafs.FileType.Directory and not info.base_name.startswith((".", "_"))
        )

    def explain_missing(self, stream: str) -> str:
        """Where the stream was looked for and what was (not) there: the root, its directory, or
        the files in it that the whitelist and blacklist leave."""
        root = self.streams.root
        key = keys.FILES_ROOT.key(system=self.system_name)
        if root.fs.get_file_info(root.path).type != pafs.FileType.Directory:
            return f"the files root {root.path} does not exist (config key {key!r})"
        directory = root.join(stream)
        if root.fs.get_file_info(directory).type != pafs.FileType.Directory:
            return (
                f"no directory {directory} under the files root (config key {key!r}); a files stream is "
                "the directory of its Parquet, JSON lines or CSV files"
            )
        config = self.streams.files_config
        skipped = ", ".join(
            [
                "names starting with '.' or '_' are skipped",
                f"whitelist {config.whitelist.pattern!r}",
                *([f"blacklist {config.blacklist.pattern!r}"] if config.blacklist is not None else []),
            ]
        )
        return f"no file to read in {directory} ({skipped}): put the stream's Parquet, JSON lines or CSV files there"

    def stream_exists(self, stream: str) -> bool:
        root = self.streams.root
        return root.fs.get_file_info(root.join(stream)).type == pafs.FileType.Directory

    offset_comparator = staticmethod(compare_file_offsets)

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        return file_offsets_after(offsets)

    def split_columnar(self, envelope: ColumnarEnvelope, offset: str) -> tuple[ColumnarEnvelope, ColumnarEnvelope]:
        """``envelope``'s rows up to and including ``offset``, and those after it (both non-empty:
        ``offset`` is at or past its first row and before its last). A batch is rows of one file."""
        first = parse_file_offset(envelope.first_offset, envelope.ssp)
        at = parse_file_offset(offset, envelope.ssp)
        cut = at.row - first.row + 1
        if at.path != first.path or not 0 < cut < envelope.rows:
            raise OffsetError(f"{envelope!r} cannot be cut after offset {offset!r}: not one of its rows but its last")
        batch = envelope.message
        head = ColumnarEnvelope(envelope.ssp, envelope.first_offset, offset, batch.slice(0, cut))
        tail = ColumnarEnvelope(envelope.ssp, str(FileOffset(at.path, at.row + 1)), envelope.offset, batch.slice(cut))
        return head, tail
