"""What the admin and the consumer both need of a files stream: its partitions (file groups),
each file's format, and the config and file system they come from."""

from __future__ import annotations

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import SystemStream
from samza_dagster.system.files.config import FilesSystemConfig
from samza_dagster.system.files.fs import FileRoot, open_root
from samza_dagster.system.files.partitions import ROW_COUNTS, FileEntry, partition_files
from samza_dagster.system.files.readers import count_rows, format_of


class FilesStreams:
    """The files system's view of its streams, one per admin or consumer."""

    def __init__(self, system: str, config: Config) -> None:
        self.system = system
        self.files_config = FilesSystemConfig.from_config(system, config)
        self.root: FileRoot = open_root(self.files_config.root, keys.FILES_ROOT.key(system=system))
        self._streams = StreamConfig(config)

    def partitions(self, stream: str) -> list[list[FileEntry]]:
        return partition_files(self.root, self.files_config, stream)

    def format(self, stream: str, entry: FileEntry) -> str:
        configured = self._streams.get_property(SystemStream(self.system, stream), keys.STREAM_FILES_FORMAT)
        if configured:  # checked like every typed key: parquet, jsonl or csv
            key = self._streams.property_key(SystemStream(self.system, stream), keys.STREAM_FILES_FORMAT)
            configured = keys.STREAM_FILES_FORMAT.read(Config({key: configured}), key)
        return format_of(entry.name, configured, self.where(stream))

    def timestamp_column(self, stream: str) -> str | None:
        """The column timestamp startpoints resolve by (times.py); None: files' modification times."""
        column = self._streams.get_property(SystemStream(self.system, stream), keys.STREAM_FILES_TIMESTAMP_COLUMN)
        return column.strip() or None if column else None

    def timestamp_column_key(self, stream: str) -> str:
        """The key that names the stream's timestamp column (for errors)."""
        return self._streams.property_key(SystemStream(self.system, stream), keys.STREAM_FILES_TIMESTAMP_COLUMN)

    def row_count(self, stream: str, entry: FileEntry) -> int:
        fmt = self.format(stream, entry)
        return ROW_COUNTS.count(entry, lambda: count_rows(self.root, entry, fmt, self.where(stream)))

    def where(self, stream: str, partition: int | None = None) -> str:
        part = f" partition {partition}" if partition is not None else ""
        return f"files stream {self.system}.{stream}{part}"
