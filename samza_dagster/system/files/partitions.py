"""A files stream's partitions: Samza's DirectoryPartitioner over ``<root>/<name>/``.

Every file under the stream's directory (recursively: Hive-style ``day=2024-01-01/`` directories
count) is a candidate, except those whose path has a part starting with ``.`` or ``_`` (Hadoop's
and Spark's markers and temporary files: ``_SUCCESS``, ``.part-0.crc``, the producer's
``.inprogress`` files). A path must match the whitelist and not the blacklist (full matches on the
path under the stream's directory). Files are grouped by Samza's group pattern — a regex holding
``[id]``: the text matched where ``[id]`` stands is the group's id, and files with the same id are
one partition (``part-[id]-.*\\.parquet`` puts ``part-0-a.parquet`` and ``part-0-b.parquet``
together); a file the pattern does not match, or no pattern, is a group of its own. Partitions are
the groups in id order; a partition's files are read in path order.

The listing is taken when a job starts: files added later are read by the next run (Samza's
partitioner likewise ignores new files). Row counts (for the offsets the admin reports) come from a
Parquet footer, or by reading a JSON lines or CSV file once; they are cached by path, size and
modification time.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow.fs as pafs

from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.files.config import FilesSystemConfig
from samza_dagster.system.files.fs import FileRoot

_GROUP_ID = "[id]"


@dataclass(frozen=True, slots=True)
class FileEntry:
    #: the path under the stream's directory, ``/``-separated: the file part of its offsets
    name: str
    #: the full path on the file system
    path: str
    size: int
    mtime_ns: int


def _hidden(name: str) -> bool:
    return any(part.startswith((".", "_")) for part in name.split("/"))


def list_files(root: FileRoot, config: FilesSystemConfig, stream: str) -> list[FileEntry]:
    """The stream's readable files in path order; StreamNotFoundError when its directory is absent."""
    directory = root.join(stream)
    info = root.fs.get_file_info(directory)
    if info.type != pafs.FileType.Directory:
        raise StreamNotFoundError(config.system, stream, f"no directory {directory}")
    files = []
    for entry in root.fs.get_file_info(pafs.FileSelector(directory, recursive=True)):
        if entry.type != pafs.FileType.File:
            continue
        name = entry.path[len(directory) :].lstrip("/")
        if _hidden(name) or not config.whitelist.fullmatch(name):
            continue
        if config.blacklist is not None and config.blacklist.fullmatch(name):
            continue
        files.append(FileEntry(name, entry.path, entry.size or 0, entry.mtime_ns or 0))
    files.sort(key=lambda f: f.name)
    return files


def group_id(name: str, pattern: str | None) -> str:
    """Samza's extractGroupIdentifier: split the pattern at ``[id]``; what lies between a match of
    the prefix and the next match of the suffix is the id; the name itself when either fails."""
    if not pattern or pattern.count(_GROUP_ID) != 1:
        return name
    prefix, suffix = pattern.split(_GROUP_ID)
    head = re.search(prefix, name)
    if head is None:
        return name
    tail = re.compile(suffix).search(name, head.end())
    if tail is None:
        return name
    return name[head.end() : tail.start()]


def partition_files(root: FileRoot, config: FilesSystemConfig, stream: str) -> list[list[FileEntry]]:
    """The stream's partitions, each its files in path order (module docstring)."""
    groups: dict[str, list[FileEntry]] = {}
    for entry in list_files(root, config, stream):
        groups.setdefault(group_id(entry.name, config.group_pattern), []).append(entry)
    return [groups[gid] for gid in sorted(groups)]


class RowCounts:
    """Row counts of files, cached by (path, size, mtime): a file that changes is counted again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, int, int], int] = {}

    def count(self, entry: FileEntry, compute: Callable[[], int]) -> int:
        key = (entry.path, entry.size, entry.mtime_ns)
        with self._lock:
            found = self._counts.get(key)
        if found is None:
            found = compute()
            with self._lock:
                self._counts[key] = found
        return found


#: one cache per process: admins are created per container, per metrics reporter and per lookup
ROW_COUNTS = RowCounts()
