"""Offsets of the files system: ``<file>:<row>`` — the file's path under the stream's directory
and the row's number in it, from 0 (Samza's HDFS offsets are ``<fileIndex>:<offsetInFile>``; the
path instead of an index keeps an offset meaningful when files are added to the directory).

A partition's files are read in path order, so offsets order as (path, row): the admin's
``offset_comparator`` compares paths as strings, then rows as integers. A path may hold ``:``;
the row is after the last one.
"""

from __future__ import annotations

from typing import NamedTuple

from samza_dagster.model import END_OF_STREAM_OFFSET, SystemStreamPartition
from samza_dagster.system.errors import OffsetError


class FileOffset(NamedTuple):
    path: str
    row: int

    def __str__(self) -> str:
        return f"{self.path}:{self.row}"


def parse_file_offset(offset: str, ssp: SystemStreamPartition | None = None) -> FileOffset:
    path, sep, row = offset.rpartition(":")
    if sep and path and row.isdigit():
        return FileOffset(path, int(row))
    where = f"{ssp}: " if ssp is not None else ""
    raise OffsetError(f"{where}offset {offset!r} is not a files offset (<file>:<row>, e.g. part-0.parquet:0)")


def compare_file_offsets(offset1: str, offset2: str) -> int:
    """Samza's rule for end-of-stream (after every other offset), then (path, row)."""
    if offset1 == END_OF_STREAM_OFFSET or offset2 == END_OF_STREAM_OFFSET:
        return (offset1 == END_OF_STREAM_OFFSET) - (offset2 == END_OF_STREAM_OFFSET)
    a, b = parse_file_offset(offset1), parse_file_offset(offset2)
    return (a > b) - (a < b)


def file_offsets_after(offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
    """The next row of the same file: the consumer steps to the next file when it is past the end."""
    result = {}
    for ssp, offset in offsets.items():
        at = parse_file_offset(offset, ssp)
        result[ssp] = str(FileOffset(at.path, at.row + 1))
    return result
