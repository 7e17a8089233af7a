"""SystemConsumer of the files system: each partition's files read in order, in Arrow batches.

At ``start`` each registered partition's files are listed (partitions.py) and it is placed at its
registered offset — the first file whose path is at or after the offset's, at the offset's row in
that file (row 0 of a later one). A poll returns, per partition, the rows of its next Arrow batch
(``files.fetch.size`` rows at most, or the container's buffer share): each row a dict of column
→ value, at offset ``<file>:<row>``, with no key. After the last row of its last file a partition
returns its end-of-stream envelope once — a files stream is bounded whatever its config says.

Columnar delivery (``deliver_columnar``, for the partitions of tasks that take Arrow batches): a
poll returns the batch itself as one :class:`ColumnarEnvelope` (offsets of its first and last row,
``files.fetch.size`` rows at most) — no dict, envelope or offset string per row. Its size is the
batch's bytes, so the container's byte budget bounds how many batches wait in the buffers.

A file that cannot be read — a Parquet page or footer that does not decode, a text file no row of
which is at fault — fails the job in one line naming it, how to leave it out (the blacklist key)
and ``task.dlq.stream``; when the job drops or dead-letters bad messages, the rest of the file
from the row it failed at becomes one bad row (``BadRow.last_row``: its offset is the file's last
row, so a restart resumes after the file) and the next file is read. A Parquet read that fails is
retried a row group at a time first, so the rows of the groups before the bad one are handed out.

Reading is a local decode (or a read from an object store through pyarrow's buffered streams), so
the run loop polls the consumer on its own thread, as it does the embedded log's.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.model import ColumnarEnvelope, IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.errors import ConsumerSetupError, FileFormatError, PartitionError, SystemClientError
from samza_dagster.system.files.bad_rows import BadRow, BadRowCheck
from samza_dagster.system.files.offsets import FileOffset, parse_file_offset
from samza_dagster.system.files.partitions import FileEntry
from samza_dagster.system.files.readers import FileReader
from samza_dagster.system.files.streams import FilesStreams


class _Partition:
    """Where one partition's reading stands: its files, the one being read, the reader."""

    __slots__ = ("files", "index", "start_row", "reader", "ended", "where")

    def __init__(self, files: list[FileEntry], start: FileOffset, where: str) -> None:
        self.files = files
        self.index = next((i for i, f in enumerate(files) if f.name >= start.path), len(files))
        self.start_row = start.row if self.index < len(files) and files[self.index].name == start.path else 0
        self.reader: FileReader | None = None
        self.ended = False
        self.where = where


class FilesSystemConsumer:
    poll_on_caller_thread = True

    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.streams = FilesStreams(system_name, config)
        self._fetch = self.streams.files_config.fetch_size
        self._registered: dict[SystemStreamPartition, FileOffset] = {}
        self._partitions: dict[SystemStreamPartition, _Partition] = {}
        self._columnar: set[SystemStreamPartition] = set()
        self._started = False

    def bad_row_decoder(self) -> BadRowCheck:
        """A row of a text file that does not parse arrives as its BadRow (bad_rows.py)."""
        return BadRowCheck()

    def deliver_columnar(self, ssps: Iterable[SystemStreamPartition]) -> None:
        """Deliver these partitions' rows as one ColumnarEnvelope per batch (module docstring)."""
        self._columnar.update(ssps)

    def limit_fetch(self, envelopes: int) -> None:
        """Rows per partition per poll within the container's buffer share (consumers.py); a
        columnar partition's batch is one envelope, whatever its rows."""
        self._fetch = max(1, min(self.streams.files_config.fetch_size, envelopes))

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        if self._started:
            raise SystemClientError(f"{ssp} registered with the files consumer after it started")
        self._registered[ssp] = parse_file_offset(offset, ssp)

    def start(self) -> None:
        by_stream: dict[str, list[SystemStreamPartition]] = {}
        for ssp in self._registered:
            by_stream.setdefault(ssp.stream, []).append(ssp)
        for stream, ssps in by_stream.items():
            groups = self.streams.partitions(stream)
            for ssp in ssps:
                if not 0 <= ssp.partition < len(groups):
                    raise PartitionError(f"{ssp}: files stream {stream!r} has {len(groups)} partitions (file groups)")
                where = self.streams.where(stream, ssp.partition)
                self._partitions[ssp] = _Partition(groups[ssp.partition], self._registered[ssp], where)
        self._started = True

    def _unreadable(
        self, ssp: SystemStreamPartition, state: _Partition, reader: FileReader, exc: FileFormatError
    ) -> BadRow:
        """A file that fails to read from ``reader.row`` on: the rest of it as one bad row, which the
        task's bad-message policy drops or dead-letters (the next file is read next) — when the job
        has such a policy; else ``exc``, with how to leave the file out."""
        hint = self.streams.leave_out_hint(reader.entry)
        if not self.streams.passes_on_unreadable_files:
            raise FileFormatError(f"{exc} — {hint}, or set {keys.TASK_DLQ_STREAM.name} to dead-letter it") from exc
        last = max(reader.row, self.streams.row_count(ssp.stream, reader.entry) - 1)
        reader.close()
        state.reader = None
        state.index += 1
        state.start_row = 0
        return BadRow(reader.entry.name, reader.row, b"", str(exc), last_row=last)

    def stop(self) -> None:
        for state in self._partitions.values():
            if state.reader is not None:
                state.reader.close()
                state.reader = None

    def poll(
        self, ssps: Iterable[SystemStreamPartition], timeout_s: float
    ) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        result: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = {}
        for ssp in ssps:
            state = self._partitions.get(ssp)
            if state is None:
                raise ConsumerSetupError(f"{ssp} was polled but never registered with the files consumer")
            if state.ended:
                continue
            envelopes = self._read(ssp, state)
            if envelopes:
                result[ssp] = envelopes
        return result

    def _read(self, ssp: SystemStreamPartition, state: _Partition) -> list[IncomingMessageEnvelope]:
        while state.index < len(state.files):
            reader = state.reader
            if reader is None:
                entry = state.files[state.index]
                if state.start_row and state.start_row >= self.streams.row_count(ssp.stream, entry):
                    state.index += 1  # resumed past its last row (an unreadable file's too: never opened again)
                    state.start_row = 0
                    continue
                fmt = self.streams.format(ssp.stream, entry)
                reader = state.reader = FileReader(self.streams.root, entry, fmt, state.start_row, state.where)
            first = reader.row
            columnar = ssp in self._columnar
            try:
                batch = reader.next_batch(self.streams.files_config.fetch_size if columnar else self._fetch)
            except FileFormatError as exc:
                batch = self._unreadable(ssp, state, reader, exc)
            if type(batch) is BadRow:  # the task instance fails, drops or dead-letters it (bad_rows.py)
                offset = f"{batch.file}:{batch.last_row if batch.last_row is not None else batch.row}"
                return [IncomingMessageEnvelope(ssp, offset, None, batch, len(batch.raw))]
            if batch is not None:
                assert isinstance(batch, pa.RecordBatch)
                name = reader.entry.name
                if columnar:
                    return [ColumnarEnvelope(ssp, f"{name}:{first}", f"{name}:{reader.row - 1}", batch)]
                size = batch.get_total_buffer_size() // batch.num_rows  # nbytes costs ~16 µs a batch
                envelope = IncomingMessageEnvelope
                return [
                    envelope(ssp, f"{name}:{row}", None, message, size)
                    for row, message in enumerate(batch.to_pylist(), first)
                ]
            reader.close()
            state.reader = None
            state.index += 1
            state.start_row = 0
        state.ended = True
        return [IncomingMessageEnvelope.end_of_stream(ssp)]
