"""Reading one partition of an embedded-log stream back in tests, as a consumer sees it, and
what tests do to stream files behind the log's back (through the file's own table layout)."""

from __future__ import annotations

import os
import sqlite3

from samza_dagster.config import Config
from samza_dagster.system import SystemStreamPartition
from samza_dagster.system.log import LogSystemFactory
from samza_dagster.system.log.formats import FORMATS, LogFormat

Message = tuple[int, "str | None", "str | None"]  # offset, key, value (None: a tombstone)


def read_partition(config: Config, system: str, stream: str, partition: int, start: str) -> list[Message]:
    """Every message of ``partition`` from offset ``start`` to its end, keys and values decoded."""
    consumer = LogSystemFactory().get_consumer(system, config)
    ssp = SystemStreamPartition(system, stream, partition)
    consumer.register(ssp, start)
    consumer.start()
    out: list[Message] = []
    try:
        while True:
            envelopes = consumer.poll([ssp], 0).get(ssp, [])
            if not envelopes:
                return out
            out += [(int(e.offset), e.key and e.key.decode(), e.message and e.message.decode()) for e in envelopes]
    finally:
        consumer.stop()


def _file_format(conn: sqlite3.Connection) -> LogFormat:
    row = conn.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
    return FORMATS[1 if row is None else int(row[0])]


def file_rows(path: str | os.PathLike, partition: int) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """Every row ``(offset, key, value, timestamp)`` a stream file holds of ``partition``, in offset
    order, through the file's own table layout (whichever tables it keeps them in)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return _file_format(conn).read(conn, partition, 0, 1 << 40)
    finally:
        conn.close()


def delete_rows_below(path: str | os.PathLike, end: int) -> None:
    """Remove every partition's rows below offset ``end``, as retention would (without recording
    the partitions' next offsets: only what a pass leaves behind, for tests of readers)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        fmt = _file_format(conn)
        (count,) = conn.execute("SELECT value FROM meta WHERE name = 'partition_count'").fetchone()
        conn.execute("BEGIN IMMEDIATE")
        for partition in range(int(count)):
            fmt.delete_range(conn, partition, 0, end)
        conn.execute("COMMIT")
    finally:
        conn.close()


def delete_rows(path: str | os.PathLike, partition: int, offsets: list[int]) -> None:
    """Remove the given offsets of ``partition``, as compaction would."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        _file_format(conn).delete_offsets(conn, partition, offsets)
        conn.execute("COMMIT")
    finally:
        conn.close()
