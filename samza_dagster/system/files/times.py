"""Timestamp startpoints on a files stream: the offset a time resolves to (docs/decisions.md).

Files carry no message timestamps, so a partition's time is one of two things:

* by default, each **file's modification time**: a timestamp resolves to row 0 of the first file,
  in the partition's offset order (path order), modified at or after it — "the files that landed
  since then", as a day's drop of files is reprocessed;
* with ``streams.<id>.files.timestamp.column`` (a column of event times: an Arrow timestamp or
  date, or an integer of epoch milliseconds), the **first row**, in offset order, whose value is
  at or after it — scanning the partition's files in Arrow batches up to that row (once, when the
  startpoint is set and when it is applied; rows that do not parse and nulls are passed over).

Either way it is the earliest *offset* whose time is at or after the timestamp, as Kafka's
``offsetsForTimes``: times need not rise with offsets, and reading goes on in offset order from
there. None when no file (row) is at or after it.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from samza_dagster.system.errors import FileFormatError
from samza_dagster.system.files.bad_rows import BadRow
from samza_dagster.system.files.partitions import FileEntry
from samza_dagster.system.files.readers import FileReader
from samza_dagster.system.files.streams import FilesStreams

#: rows per batch while scanning for a time
SCAN_ROWS = 65_536


def offset_for_time(streams: FilesStreams, stream: str, partition: int, files: list[FileEntry], ts: int) -> str | None:
    """The offset ``<file>:<row>`` a timestamp (ms) resolves to in one partition (module docstring)."""
    column = streams.timestamp_column(stream)
    if column is None:
        for entry in files:
            if entry.mtime_ns // 1_000_000 >= ts and streams.row_count(stream, entry):
                return f"{entry.name}:0"
        return None
    where = streams.where(stream, partition)
    for entry in files:
        reader = FileReader(streams.root, entry, streams.format(stream, entry), 0, where)
        try:
            while True:
                first = reader.row
                batch = reader.next_batch(SCAN_ROWS)
                if batch is None:
                    break
                if isinstance(batch, BadRow):
                    continue
                at = _first_at_or_after(
                    batch, column, ts, f"{where}: file {entry.name}", streams.timestamp_column_key(stream)
                )
                if at >= 0:
                    return f"{entry.name}:{first + at}"
        finally:
            reader.close()
    return None


def _first_at_or_after(batch: pa.RecordBatch, column: str, ts: int, where: str, key: str) -> int:
    """The index of the batch's first row whose ``column`` (named by ``key``) is at or after ``ts``
    (ms); -1: none."""
    index = batch.schema.get_field_index(column)
    if index < 0:
        raise FileFormatError(
            f"{where}: no column {column!r} (the stream's timestamp column, {key}); its columns: "
            f"{', '.join(batch.schema.names)}"
        )
    values = batch.column(index)
    kind = values.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        millis = pc.cast(pc.cast(values, pa.timestamp("ms", getattr(kind, "tz", None))), pa.int64())
    elif pa.types.is_integer(kind):
        millis = values
    else:
        raise FileFormatError(
            f"{where}: column {column!r} ({key}) is {kind}: a timestamp column must hold Arrow timestamps or dates, "
            "or integers of epoch milliseconds"
        )
    return int(pc.index(pc.greater_equal(millis, pa.scalar(ts, pa.int64())), True).as_py())
