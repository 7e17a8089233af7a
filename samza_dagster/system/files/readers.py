"""Reading one file of a files stream in Arrow batches, from a given row on.

Formats: Parquet (``.parquet``, ``.pq``), JSON lines (``.jsonl``, ``.ndjson``, ``.json``) and CSV
(``.csv``), from the extension or ``streams.<id>.files.format``. Each is read through pyarrow's
streaming readers — Parquet by row group and batch, JSON lines and CSV by block — so a file is
never in memory whole, only the batch being handed out. Starting at a row skips whole Parquet row
groups by their footer counts; a text format reads (and drops) the rows before it.

A file that does not parse fails with one line naming the file, the row and pyarrow's cause. For
JSON lines and CSV, whose readers report the block rather than the row, the failing block is read
again line by line to find the first row that does not parse (or, for a value of another type
than the rows before it, the first row of the block).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import deque
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from samza_dagster.system.errors import FileFormatError
from samza_dagster.system.files.bad_rows import BadRow, locate, open_after, parse_records
from samza_dagster.system.files.fs import FileRoot
from samza_dagster.system.files.partitions import FileEntry

FORMATS = ("parquet", "jsonl", "csv")
_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
_EXTENSIONS[".csv"] = "csv"


def format_of(name: str, configured: str | None, where: str) -> str:
    """The file's format: the configured one, else by extension; FileFormatError naming the file."""
    if configured:
        return configured
    found = _EXTENSIONS.get(os.path.splitext(name)[1].lower())
    if found is None:
        raise FileFormatError(
            f"{where}: file {name}: unknown format (extension not .parquet, .jsonl, .json, .ndjson or .csv); "
            "set streams.<stream-id>.files.format"
        )
    return found


class FileReader:
    """One file's rows from ``start_row`` on, as Arrow record batches of at most ``batch_rows``."""

    def __init__(self, root: FileRoot, entry: FileEntry, fmt: str, start_row: int, where: str) -> None:
        self.entry = entry
        self.format = fmt
        #: the row number of the next row :meth:`next_batch` returns
        self.row = start_row
        self._root = root
        self._where = where
        self._pending: pa.RecordBatch | None = None
        self._batches: Iterator[pa.RecordBatch] | None = None
        self._closer: object = None
        #: the row the current streaming reader began at (after a bad row, the row after it)
        self._stream_start = 0
        #: the schema of the rows read so far: rows after a bad one are read with it
        self._schema: pa.Schema | None = None
        #: a Parquet file read a row group at a time (after a read failed: batches span groups)
        self._group_by_group = False
        #: what a recovery from a bad row put ahead of the streaming reader
        self._queue: deque[pa.RecordBatch | BadRow] = deque()

    def next_batch(self, batch_rows: int) -> pa.RecordBatch | BadRow | None:
        """The next rows (at most ``batch_rows``), or a row of a text file that does not parse
        (bad_rows.py); None at the end of the file."""
        while True:
            if self._queue:
                item = self._queue.popleft()
            else:
                try:
                    item = self._take(batch_rows)
                except FileFormatError:
                    raise
                except (pa.ArrowException, OSError, ValueError) as exc:
                    if self.format in ("jsonl", "csv") and self._recover():
                        continue
                    if self.format == "parquet" and not self._group_by_group:
                        # a batch spanning row groups fails whole: read on a row group at a time,
                        # so the rows before the bad group are handed out and the error is its own
                        self._group_by_group = True
                        self.close()
                        self._pending = None
                        continue
                    self.close()
                    raise self._error(exc) from None
            if isinstance(item, BadRow):
                self.row += 1
            elif item is not None:
                self._schema = self._schema or item.schema
                self.row += item.num_rows
            return item

    def close(self) -> None:
        close = getattr(self._closer, "close", None)
        if callable(close):
            close()
        self._batches = None

    # -- internals -----------------------------------------------------------------------------
    def _take(self, batch_rows: int) -> pa.RecordBatch | None:
        if self._batches is None:
            self._batches = self._open(batch_rows)
        while self._pending is None or self._pending.num_rows == 0:
            self._pending = next(self._batches, None)
            if self._pending is None:
                return None
        batch = self._pending
        if batch.num_rows > batch_rows:
            self._pending = batch.slice(batch_rows)
            return batch.slice(0, batch_rows)
        self._pending = None
        return batch

    def _open(self, batch_rows: int) -> Iterator[pa.RecordBatch]:
        if self.format == "parquet":
            return self._parquet(batch_rows)
        stream = self._root.fs.open_input_stream(self.entry.path)
        self._closer = stream
        reader = (
            pajson.open_json(stream, read_options=pajson.ReadOptions(block_size=1 << 20))
            if self.format == "jsonl"
            else pacsv.open_csv(stream, read_options=pacsv.ReadOptions(block_size=1 << 20))
        )
        return _skip(iter(reader), self.row)

    def _parquet(self, batch_rows: int) -> Iterator[pa.RecordBatch]:
        source = self._root.fs.open_input_file(self.entry.path)
        self._closer = source
        parquet = pq.ParquetFile(source)
        skip, first_group = self.row, 0
        metadata = parquet.metadata
        while first_group < metadata.num_row_groups and skip >= metadata.row_group(first_group).num_rows:
            skip -= metadata.row_group(first_group).num_rows
            first_group += 1
        if first_group >= metadata.num_row_groups:
            return iter(())
        groups = list(range(first_group, metadata.num_row_groups))
        if self._group_by_group:
            return _skip(_each_group(parquet, groups, batch_rows), skip)
        return _skip(parquet.iter_batches(batch_size=batch_rows, row_groups=groups), skip)

    def _recover(self) -> bool:
        """After a failed block of a text file: queue the good rows before its first bad row and
        the bad row, and read on after it; False when no row is bad (the file is)."""
        try:
            with self._root.fs.open_input_stream(self.entry.path) as raw:
                data = io.BufferedReader(raw)  # type: ignore[arg-type]
                found = locate(data, self.format, self.entry.name, self._stream_start, self.row, self._schema)
            if found is None:
                return False
            if found.bad.row >= self.row:
                if found.good:
                    self._queue.extend(parse_records(found.good, self.format, found.header, self._schema).to_batches())
                self._queue.append(found.bad)
            skip = max(0, self.row - (found.bad.row + 1))  # a restart past the bad row: rows to skip still
            self.close()
            self._pending = None
            stream = self._root.fs.open_input_file(self.entry.path)
            self._closer = stream
            self._stream_start = found.bad.row + 1
            if found.resume_at >= stream.size():
                self._batches = iter(())
            else:
                stream.seek(found.resume_at)
                self._batches = _skip(open_after(stream, self.format, found.header, self._schema), skip)
            return True
        except (pa.ArrowException, OSError, UnicodeDecodeError):
            return False

    def _error(self, exc: BaseException) -> FileFormatError:
        row = self._locate() if self.format in ("jsonl", "csv") else None
        at = f"row {row}" if row is not None else f"row {self.row} or after"
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return FileFormatError(f"{self._where}: file {self.entry.name} {at}: {cause}")

    def _locate(self) -> int | None:
        """The first row at or after ``self.row`` that does not parse as a row of its format."""
        try:
            with self._root.fs.open_input_stream(self.entry.path) as raw:
                text = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", newline="")  # type: ignore[arg-type]
                return _first_bad_json(text, self.row) if self.format == "jsonl" else _first_bad_csv(text, self.row)
        except (OSError, UnicodeDecodeError):
            return None


def _each_group(parquet: pq.ParquetFile, groups: list[int], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The groups' batches, each group decoded only once the ones before it are handed out."""
    for group in groups:
        yield from parquet.iter_batches(batch_size=batch_rows, row_groups=[group])


def _skip(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0


def _first_bad_json(text: io.TextIOBase, start: int) -> int | None:
    row = 0
    for line in text:
        if not line.strip():
            continue  # pyarrow skips blank lines: they are no row
        if row >= start:
            try:
                if not isinstance(json.loads(line), dict):
                    return row
            except ValueError:
                return row
        row += 1
    return None


def _first_bad_csv(text: io.TextIOBase, start: int) -> int | None:
    records = csv.reader(text)
    header = next(records, None)
    if header is None:
        return None
    for row, record in enumerate(records):
        if row >= start and len(record) != len(header):
            return row
    return None


def count_rows(root: FileRoot, entry: FileEntry, fmt: str, where: str) -> int:
    """The file's row count: a Parquet footer's, else by reading the file once in batches."""
    if fmt == "parquet":
        try:
            with root.fs.open_input_file(entry.path) as source:
                return int(pq.ParquetFile(source).metadata.num_rows)
        except (pa.ArrowException, OSError) as exc:
            raise FileFormatError(f"{where}: file {entry.name}: not a Parquet file: {exc}") from None
    reader = FileReader(root, entry, fmt, 0, where)
    total = 0
    try:
        while (batch := reader.next_batch(1 << 16)) is not None:
            total += 1 if isinstance(batch, BadRow) else batch.num_rows  # a bad row keeps its offset
    finally:
        reader.close()
    return total
