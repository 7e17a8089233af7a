"""Rows of JSON lines and CSV files that do not parse: found, handed on as :class:`BadRow`, and
read past.

pyarrow's streaming readers parse a text file a block (1 MiB) at a time and fail a whole block at
its first bad row, naming neither the row nor giving back the good rows around it. So when a block
fails, the file is scanned as bytes, record by record (a JSON line that is not blank; a CSV record,
a quoted field may span lines), from the row the current reader began at, and parsed a chunk at a
time with the schema of the batches read so far — so a value of another type is bad too — halving
a failing chunk down to its first bad record. What comes back (:class:`Recovery`) is what the
reader needs to go on: the good records between the last row it handed out and the bad one, the
bad one, and the byte offset just after it, where a new streaming reader starts.

A bad row becomes an envelope whose message is the :class:`BadRow`; the task instance then fails the
job naming the file and row, drops it (``task.drop.deserialization.errors``) or sends it to the
dead-letter stream (``task.dlq.stream``, its raw bytes and cause) like any message its serde cannot
decode — and the checkpoint moves past it, so a restart does not meet it again.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from samza_dagster.system.errors import FileFormatError


@dataclass(frozen=True, slots=True)
class BadRow:
    """A row of ``file`` that does not parse: its number, its raw bytes and why — or, with
    ``last_row``, rows ``row``..``last_row`` of a file that cannot be read from ``row`` on (no
    raw bytes: the file itself is the evidence)."""

    file: str
    row: int
    raw: bytes
    cause: str
    last_row: int | None = None

    def __bytes__(self) -> bytes:  # what a dead letter carries of it: the raw record
        return self.raw


class BadRowCheck:
    """The decoder the container puts on a files partition: a bad row fails decoding, with its
    file, row and cause, so the task instance treats it as any message its serde cannot decode."""

    __slots__ = ()

    def decode(self, envelope: object) -> bool:
        bad = getattr(envelope, "message", None)
        if type(bad) is BadRow:
            if bad.last_row is not None:
                raise FileFormatError(f"file {bad.file} rows {bad.row}..{bad.last_row} cannot be read: {bad.cause}")
            raise FileFormatError(f"file {bad.file} row {bad.row} does not parse: {bad.cause}")
        return True


@dataclass(frozen=True, slots=True)
class Recovery:
    """Where a failed block's first bad row is (at or after ``first_row``)."""

    #: the bad row's number, and its raw bytes and cause
    bad: BadRow
    #: the records from ``keep_from`` up to the bad row, as raw bytes (each one record)
    good: list[bytes]
    #: the byte offset just after the bad row
    resume_at: int
    #: the CSV header line (empty for JSON lines)
    header: bytes


def records(data: io.BufferedIOBase, fmt: str) -> Iterator[tuple[int, int, bytes]]:
    """``(row, end byte offset, raw record)`` of every record of a text file (a CSV header is no
    row; blank JSON lines are none: pyarrow skips them)."""
    offset, row = 0, 0
    pending = b""
    for line in data:
        offset += len(line)
        if fmt == "jsonl":
            if line.strip():
                yield row, offset, line
                row += 1
            continue
        pending += line
        if pending.count(b'"') % 2:  # inside a quoted field that spans lines
            continue
        record, pending = pending, b""
        yield row, offset, record
        row += 1


#: records parsed together while looking for a bad one (a failing chunk is halved to find it)
CHUNK = 1024


def locate(
    data: io.BufferedIOBase, fmt: str, name: str, first_row: int, keep_from: int, schema: pa.Schema | None
) -> Recovery | None:
    """The first record at or after ``first_row`` (where the failed reader began) that does not
    parse with ``schema`` (that of the rows read so far; else the first chunk's); None if every
    one does (the failure was not a bad row). Records from ``keep_from`` on (the next row to hand
    out) up to the bad one are kept. Records are parsed a chunk at a time and a failing chunk is
    halved down to its bad record: a bad row deep in a large file costs one pass of pyarrow over
    the records before it, not a parse per record."""
    rows = records(data, fmt)
    header = b""
    if fmt == "csv":
        found = next(rows, None)
        if found is None:
            return None
        header = found[2]
        rows = ((row - 1, end, raw) for row, end, raw in rows)
    good: list[bytes] = []
    chunk: list[tuple[int, int, bytes]] = []
    for record in rows:
        if record[0] < first_row:
            continue
        chunk.append(record)
        if len(chunk) < CHUNK:
            continue
        schema, bad = _check(chunk, fmt, header, schema)
        if bad is not None:
            return _recovery(name, chunk, bad, keep_from, good, header)
        good.extend(raw for row, _, raw in chunk if row >= keep_from)
        chunk = []
    if chunk:
        schema, bad = _check(chunk, fmt, header, schema)
        if bad is not None:
            return _recovery(name, chunk, bad, keep_from, good, header)
    return None


def _check(
    chunk: list[tuple[int, int, bytes]], fmt: str, header: bytes, schema: pa.Schema | None
) -> tuple[pa.Schema | None, tuple[int, str] | None]:
    """The schema to check later chunks with, and the index in ``chunk`` of its first record
    that does not parse with its cause (None when all do)."""
    try:
        table = parse_records([raw for _, _, raw in chunk], fmt, header, schema)
        return schema or table.schema, None
    except (pa.ArrowException, ValueError):
        pass
    lo, hi = 0, len(chunk)  # the first bad record is in chunk[lo:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            parse_records([raw for _, _, raw in chunk[lo:mid]], fmt, header, schema)
            lo = mid
        except (pa.ArrowException, ValueError):
            hi = mid
    try:
        parse_records([chunk[lo][2]], fmt, header, schema)
        return schema, (lo, "does not fit the rows before it")
    except (pa.ArrowException, ValueError) as exc:
        text = str(exc).strip()
        return schema, (lo, text.splitlines()[0] if text else type(exc).__name__)


def _recovery(
    name: str,
    chunk: list[tuple[int, int, bytes]],
    bad: tuple[int, str],
    keep_from: int,
    good: list[bytes],
    header: bytes,
) -> Recovery:
    index, cause = bad
    row, end, raw = chunk[index]
    good.extend(r for n, _, r in chunk[:index] if n >= keep_from)
    return Recovery(BadRow(name, row, raw, cause), good, end, header)


def parse_records(records_: list[bytes], fmt: str, header: bytes, schema: pa.Schema | None) -> pa.Table:
    """Records as one table (of ``schema``'s types where known); pyarrow's error if one does not parse."""
    data = io.BytesIO((header if fmt == "csv" else b"") + b"".join(_terminated(r) for r in records_))
    if fmt == "jsonl":
        options = pajson.ParseOptions(explicit_schema=schema) if schema is not None else None
        return pajson.read_json(data, parse_options=options)
    return pacsv.read_csv(data, convert_options=_csv_types(schema))


def _terminated(record: bytes) -> bytes:
    return record if record.endswith(b"\n") else record + b"\n"


def _csv_types(schema: pa.Schema | None) -> pacsv.ConvertOptions | None:
    return pacsv.ConvertOptions(column_types={f.name: f.type for f in schema}) if schema is not None else None


def open_after(stream: pa.NativeFile, fmt: str, header: bytes, schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
    """A streaming reader of the rest of a text file from ``stream``'s position (just after a bad
    row), typed as the rows before it were."""
    if fmt == "jsonl":
        options = pajson.ParseOptions(explicit_schema=schema) if schema is not None else None
        return iter(
            pajson.open_json(stream, read_options=pajson.ReadOptions(block_size=1 << 20), parse_options=options)
        )
    names = next(csv.reader(io.StringIO(header.decode("utf-8"))), [])
    read = pacsv.ReadOptions(block_size=1 << 20, column_names=names)
    return iter(pacsv.open_csv(stream, read_options=read, convert_options=_csv_types(schema)))
