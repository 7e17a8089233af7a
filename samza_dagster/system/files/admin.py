"""SystemAdmin of the files system: a stream's partitions and offsets from its directory.

A partition's oldest offset is ``<first file>:0``; its upcoming offset is ``<last file>:<rows>``
(the row after its last), its newest the row before that in the last file that has rows (None
when every file of the partition is empty). Offsets are ``<file>:<row>`` (offsets.py).
``create_stream`` makes the directory (an output's); a stream whose directory is absent does not
exist.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow.fs as pafs

from samza_dagster.config.config import Config
from samza_dagster.model import StreamSpec, SystemStreamMetadata, SystemStreamPartition, SystemStreamPartitionMetadata
from samza_dagster.system.files.offsets import FileOffset, compare_file_offsets, file_offsets_after
from samza_dagster.system.files.partitions import FileEntry
from samza_dagster.system.files.streams import FilesStreams


class FilesSystemAdmin:
    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.streams = FilesStreams(system_name, config)

    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        result: dict[str, SystemStreamMetadata] = {}
        for name in stream_names:
            partitions = self.streams.partitions(name)
            result[name] = SystemStreamMetadata(
                name, {p: self._partition_metadata(name, files) for p, files in enumerate(partitions)}
            )
        return result

    def _partition_metadata(self, stream: str, files: list[FileEntry]) -> SystemStreamPartitionMetadata:
        last = files[-1]
        rows = self.streams.row_count(stream, last)
        newest: str | None = str(FileOffset(last.name, rows - 1)) if rows else None
        if newest is None:  # the newest row is in the last file that has any
            for entry in reversed(files[:-1]):
                count = self.streams.row_count(stream, entry)
                if count:
                    newest = str(FileOffset(entry.name, count - 1))
                    break
        return SystemStreamPartitionMetadata(
            str(FileOffset(files[0].name, 0)), newest, str(FileOffset(last.name, rows))
        )

    def create_stream(self, spec: StreamSpec) -> bool:
        """The stream's directory (the partition count does not apply: files make partitions)."""
        root = self.streams.root
        directory = root.join(spec.physical_name)
        if root.fs.get_file_info(directory).type == pafs.FileType.Directory:
            return False
        root.fs.create_dir(directory, recursive=True)
        return True

    def stream_exists(self, stream: str) -> bool:
        root = self.streams.root
        return root.fs.get_file_info(root.join(stream)).type == pafs.FileType.Directory

    offset_comparator = staticmethod(compare_file_offsets)

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        return file_offsets_after(offsets)
