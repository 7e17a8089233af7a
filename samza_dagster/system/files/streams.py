"""What the admin and the consumer both need of a files stream: its partitions (file groups),
each file's format, and the config and file system they come from."""

from __future__ import annotations

import re

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import SystemStream
from samza_dagster.system.errors import FileFormatError
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
        #: a file that cannot be read is one bad message of its partition, which the task's
        #: bad-message policy drops or dead-letters, instead of an error at start
        self.passes_on_unreadable_files = bool(keys.TASK_DLQ_STREAM.get(config)) or bool(
            keys.TASK_DROP_DESERIALIZATION_ERRORS.get(config)
        )

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
        """The file's rows; a file they cannot be counted in (a broken Parquet footer) holds one
        row — the bad message it becomes — when the job passes unreadable files on, else the
        FileFormatError naming it."""
        fmt = self.format(stream, entry)
        try:
            return ROW_COUNTS.count(entry, lambda: count_rows(self.root, entry, fmt, self.where(stream)))
        except FileFormatError:
            if not self.passes_on_unreadable_files:
                raise
            return 1

    def leave_out_hint(self, entry: FileEntry) -> str:
        """``replace the file, or leave it out with <blacklist key>=<pattern>`` for ``entry``."""
        key = keys.FILES_BLACKLIST.key(system=self.system)
        # a full match of the name; '.' left as it is (it matches itself too): a backslash would
        # need doubling in a .properties file but not in --config
        pattern = re.escape(entry.name).replace("\\.", ".").replace("\\-", "-")
        present = self.files_config.blacklist
        value = f"{present.pattern}|{pattern}" if present is not None else pattern
        return f"replace the file, or leave it out with {key}={value}"

    def where(self, stream: str, partition: int | None = None) -> str:
        part = f" partition {partition}" if partition is not None else ""
        return f"files stream {self.system}.{stream}{part}"
