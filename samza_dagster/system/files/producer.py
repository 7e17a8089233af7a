"""SystemProducer of the files system: rows written as Parquet files under ``<root>/<stream>/``.

Each task (source) writes its own files, ``part-<task>-<writer id>-<n>.parquet``, so tasks and
restarts never write the same file. A file is written as a hidden ``.<name>.inprogress`` and
renamed to its name when closed — a reader (this system's consumer, Spark, DuckDB) sees only whole
files. A file is closed and the next begun past ``files.roll.bytes`` or once it is
``files.roll.ms`` old, and at every ``flush`` (each commit): a Parquet file is readable only once
its footer is written, so a file left open across a commit would hold rows the checkpoint already
covers. The first rows of a file fix its schema; a later row that does not fit it is an error
naming the stream, the task and the row.

Rows are buffered and written as one Arrow record batch per ``_BATCH_ROWS`` rows (or at a flush);
a table a columnar task sends whole (``send_table``) is written as its own batches.
Partitions and keys do not apply. Delivery is at-least-once: a restart after a crash writes again
the rows after the last commit, into new files.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.errors import WrongSystemError
from samza_dagster.system.files.config import FilesSystemConfig
from samza_dagster.system.files.fs import FileRoot, open_root
from samza_dagster.system.rows import as_arrow_table, fit_table, rows_to_batch

_BATCH_ROWS = 10_000


@dataclass
class _OpenFile:
    name: str
    temp: str
    final: str
    writer: pq.ParquetWriter
    sink: Any
    opened: float
    rows: int = 0


@dataclass
class _Output:
    """One (source, stream)'s rows not yet written and the file being written."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    schema: pa.Schema | None = None
    file: _OpenFile | None = None
    files: int = 0


class FilesSystemProducer:
    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.files_config = FilesSystemConfig.from_config(system_name, config)
        self.root: FileRoot = open_root(self.files_config.root, keys.FILES_ROOT.key(system=system_name))
        self._writer_id = uuid.uuid4().hex[:8]
        self._outputs: dict[tuple[str, str], _Output] = {}
        self.files_written = 0

    def register(self, source: str) -> None:
        pass

    def start(self) -> None:
        pass

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        ss = envelope.system_stream
        if ss.system != self.system_name:
            raise WrongSystemError(f"files producer of {self.system_name!r} was sent a message for {ss}")
        output = self._outputs.get((source, ss.stream))
        if output is None:
            output = self._outputs[(source, ss.stream)] = _Output()
        output.rows.append(envelope.message)
        if len(output.rows) >= _BATCH_ROWS:
            self._write(source, ss.stream, output)

    def send_table(self, source: str, system_stream: SystemStream, table: Any) -> None:
        """A whole batch (``MessageCollector.send_table``) written as it is, after the rows sent
        one by one before it: no row objects."""
        if system_stream.system != self.system_name:
            raise WrongSystemError(f"files producer of {self.system_name!r} was sent a table for {system_stream}")
        output = self._outputs.get((source, system_stream.stream))
        if output is None:
            output = self._outputs[(source, system_stream.stream)] = _Output()
        self._write(source, system_stream.stream, output)
        data = as_arrow_table(table, self._where(source, system_stream.stream))
        for batch in data.to_batches():
            self._write_batch(source, system_stream.stream, output, batch)

    def flush(self, source: str) -> None:
        for (src, stream), output in self._outputs.items():
            if src == source:
                self._write(source, stream, output)
                self._close(output)

    def stop(self) -> None:
        for (source, stream), output in self._outputs.items():
            self._write(source, stream, output)
            self._close(output)

    # -- internals -----------------------------------------------------------------------------
    def _where(self, source: str, stream: str) -> str:
        return f"files stream {self.system_name}.{stream} (task {source!r})"

    def _write(self, source: str, stream: str, output: _Output) -> None:
        if not output.rows:
            return
        batch = rows_to_batch(output.rows, output.schema, self._where(source, stream))
        output.rows = []
        self._write_batch(source, stream, output, batch)

    def _write_batch(self, source: str, stream: str, output: _Output, batch: pa.RecordBatch) -> None:
        """``batch`` into the open file (its first batch fixes the file's schema; a later one is
        cast to it, or is an error naming its column)."""
        if batch.num_rows == 0:
            return
        if output.schema is not None and not batch.schema.equals(output.schema):
            fitted = fit_table(pa.Table.from_batches([batch]), output.schema, self._where(source, stream))
            batch = fitted.combine_chunks().to_batches()[0]
        output.schema = batch.schema
        now = time.monotonic()
        current = output.file
        if current is not None and now - current.opened >= self.files_config.roll_ms / 1000.0:
            self._close(output)
        if output.file is None:
            output.file = self._open(source, stream, output, batch.schema, now)
        output.file.writer.write_batch(batch)
        output.file.rows += batch.num_rows
        if output.file.sink.tell() >= self.files_config.roll_bytes:
            self._close(output)

    def _open(self, source: str, stream: str, output: _Output, schema: pa.Schema, now: float) -> _OpenFile:
        task = re.sub(r"[^A-Za-z0-9_-]+", "_", source).strip("_") or "task"
        name = f"part-{task}-{self._writer_id}-{output.files:05d}.parquet"
        output.files += 1
        directory = self.root.join(stream)
        self.root.fs.create_dir(directory, recursive=True)
        temp, final = f"{directory}/.{name}.inprogress", f"{directory}/{name}"
        sink = self.root.fs.open_output_stream(temp)
        return _OpenFile(name, temp, final, pq.ParquetWriter(sink, schema), sink, now)

    def _close(self, output: _Output) -> None:
        current = output.file
        if current is None:
            return
        output.file = None
        current.writer.close()
        current.sink.close()
        if current.rows:
            self.root.fs.move(current.temp, current.final)
            self.files_written += 1
        else:
            self.root.fs.delete_file(current.temp)
