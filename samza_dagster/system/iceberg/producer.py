"""SystemProducer of the iceberg system: rows appended to tables, one table commit per container commit.

Rows sent to stream ``<t>`` (dicts) are buffered per table; every ``iceberg.buffer.rows`` rows, and
at each flush, they become one Arrow batch (system/rows.py: a row that does not fit the table's
schema is an error naming it) written as Parquet data files into the table's location — written,
not yet committed, so a commit interval's rows are never all in memory. The table is created from
the first batch's schema when it does not exist.

The container's commit (container.py) then calls :meth:`commit_checkpoints` with the checkpoints
it is about to write: every table this container wrote to since its last commit gets one commit —
one Iceberg snapshot appending its data files — whose summary carries those checkpoints
(checkpoints.py), and moves the container's tag (``checkpoint_tag``) to that snapshot, so expiring
snapshots never drops the one holding a task's newest checkpoint. Only then does the container
write its checkpoint stream. A crash before the
table commit leaves data files no snapshot references (Iceberg's orphan files: invisible to
readers, removed by orphan-file maintenance); after a crash after it, the restarted task does not
send the table again what its checkpoints say it holds (:meth:`last_checkpoints`,
container/table_replay.py). Readers see whole commits only: a table is
readable at every moment.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyiceberg.io.pyarrow import _dataframe_to_data_files
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table, Transaction
from pyiceberg.table.refs import SnapshotRefType

from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.errors import WrongSystemError
from samza_dagster.system.iceberg.catalog import IcebergTables
from samza_dagster.system.iceberg.checkpoints import checkpoint_tag, summary_properties, table_checkpoints
from samza_dagster.system.iceberg.config import IcebergSystemConfig
from samza_dagster.system.rows import as_arrow_table, fit_table, rows_to_batch


@dataclass
class _Pending:
    """One table's rows and data files since the last commit."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    #: whole batches a columnar task sent (``send_table``), in the order sent, with the rows
    #: sent one by one before each
    tables: list[pa.Table] = field(default_factory=list)
    #: rows buffered, rows and tables together
    buffered: int = 0
    files: list[DataFile] = field(default_factory=list)
    table: Table | None = None
    records: int = 0


class _TaggedCommit(Transaction):
    """One table commit that appends a snapshot and moves ``tag`` to it (:func:`checkpoint_tag`:
    snapshot expiry, Spark's ``expire_snapshots`` included, never drops a tagged snapshot).

    pyiceberg 0.12 retries a conflicting commit itself by re-staging the snapshot alone — every
    other ref update is dropped (measured: a container's tag left on its first snapshot) — so the
    tag is staged again after each of its retries; the snapshot keeps its id across them."""

    def __init__(self, table: Table, tag: str) -> None:
        super().__init__(table)
        self._tag = tag

    def tag_snapshot(self) -> None:
        (producer,) = self._snapshot_producers
        self._stage(*self._set_ref_snapshot(producer._snapshot_id, self._tag, SnapshotRefType.TAG))

    def _rebuild_snapshot_updates(self) -> None:
        super()._rebuild_snapshot_updates()
        self.tag_snapshot()


@dataclass(frozen=True)
class TableCommit:
    """What one table commit appended: for the job's summary and Dagster's materializations."""

    table: str
    snapshot_id: int
    rows: int
    data_files: int


class IcebergSystemProducer:
    #: one flush writes every source's rows: the container flushes this producer once per commit
    flush_covers_all_sources = True

    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.iceberg_config = IcebergSystemConfig.from_config(system_name, config)
        self.tables = IcebergTables(self.iceberg_config)
        job = JobConfig(config)
        self.job = f"{job.name}-{job.id}"
        self._pending: dict[str, _Pending] = {}
        #: every table commit this producer made, in order
        self.commits: list[TableCommit] = []

    @property
    def min_commit_interval_s(self) -> float:
        """Timed commits no closer than this (``iceberg.commit.interval.ms``): each is a snapshot."""
        return self.iceberg_config.commit_interval_ms / 1000

    def register(self, source: str) -> None:
        pass

    def start(self) -> None:
        pass

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        ss = envelope.system_stream
        if ss.system != self.system_name:
            raise WrongSystemError(f"iceberg producer of {self.system_name!r} was sent a message for {ss}")
        pending = self._pending.get(ss.stream)
        if pending is None:
            pending = self._pending[ss.stream] = _Pending()
        pending.rows.append(envelope.message)
        pending.buffered += 1
        if pending.buffered >= self.iceberg_config.buffer_rows:
            self._write(ss.stream, pending)

    def send_table(self, source: str, system_stream: SystemStream, table: Any) -> None:
        """A whole batch (``MessageCollector.send_table``), appended as it is: no row objects."""
        if system_stream.system != self.system_name:
            raise WrongSystemError(f"iceberg producer of {self.system_name!r} was sent a table for {system_stream}")
        pending = self._pending.get(system_stream.stream)
        if pending is None:
            pending = self._pending[system_stream.stream] = _Pending()
        if pending.rows:  # rows sent one by one before this batch keep their place before it
            pending.tables.append(self._rows_table(system_stream.stream, pending))
        data = as_arrow_table(table, self._where(system_stream.stream))
        pending.tables.append(data)
        pending.buffered += data.num_rows
        if pending.buffered >= self.iceberg_config.buffer_rows:
            self._write(system_stream.stream, pending)

    def flush(self, source: str) -> None:
        """Every buffered row written to data files (durable, committed by :meth:`commit_checkpoints`)."""
        for table, pending in self._pending.items():
            self._write(table, pending)

    def has_uncommitted(self) -> bool:
        return any(p.buffered or p.files for p in self._pending.values())

    def commit_checkpoints(self, container_id: str, checkpoints: Mapping[str, bytes]) -> list[TableCommit]:
        """One commit per table written since the last call, each carrying ``checkpoints`` (their JSON)."""
        props = summary_properties(self.job, container_id, checkpoints)
        made = []
        for name in sorted(self._pending):
            pending = self._pending[name]
            self._write(name, pending)
            if pending.files:
                made.append(self._commit(name, pending, props, container_id))
        self._pending = {name: p for name, p in self._pending.items() if p.table is not None}
        self.commits.extend(made)
        return made

    def last_checkpoints(self, tasks: Iterable[str]) -> dict[str, dict[SystemStream, bytes]]:
        """Per task, the newest checkpoint (JSON) each of the namespace's tables holds for it."""
        wanted = list(tasks)
        found: dict[str, dict[SystemStream, bytes]] = {}
        for name in self.tables.tables():
            table = self.tables.load(name)
            if table is None:
                continue
            for task, checkpoint in table_checkpoints(table, self.job, wanted).items():
                found.setdefault(task, {})[SystemStream(self.system_name, name)] = checkpoint
        return found

    def stop(self) -> None:
        """Rows not committed are left: the checkpoint does not cover them, a restart sends them again."""
        self._pending.clear()

    # -- internals -----------------------------------------------------------------------------
    def _where(self, name: str) -> str:
        return f"iceberg table {self.tables.name(name)} (system {self.system_name!r})"

    def _rows_table(self, name: str, pending: _Pending) -> pa.Table:
        """The rows sent one by one since the last batch, as a table (of the table's schema once
        it exists); the buffer of rows is emptied."""
        schema = pending.table.schema().as_arrow() if pending.table is not None else None
        batch = rows_to_batch(pending.rows, schema, self._where(name))
        pending.rows = []
        return pa.Table.from_batches([batch])

    def _write(self, name: str, pending: _Pending) -> None:
        """Everything buffered for ``name`` written as data files (the table created from the
        first batch's schema when it does not exist; everything cast to the table's schema)."""
        if not pending.buffered:
            return
        if pending.table is None:
            pending.table = self.tables.load(name)  # rows one by one are converted to its schema
        parts = pending.tables
        if pending.rows:
            parts.append(self._rows_table(name, pending))
        if pending.table is None:
            pending.table = self.tables.load_or_create(name, parts[0].schema)
        table = pending.table
        schema = table.schema().as_arrow()
        where = self._where(name)
        data = pa.concat_tables([fit_table(part, schema, where) for part in parts])
        pending.tables, pending.buffered = [], 0
        pending.files.extend(_dataframe_to_data_files(table.metadata, data, table.io, write_uuid=uuid.uuid4()))
        pending.records += data.num_rows

    def _commit(self, name: str, pending: _Pending, props: dict[str, str], container: str) -> TableCommit:
        files = pending.files
        assert pending.table is not None

        def attempt() -> Table:
            table = pending.table
            assert table is not None
            tx = _TaggedCommit(table, checkpoint_tag(self.job, container))
            with tx:
                with tx.update_snapshot(snapshot_properties=props).fast_append() as append:
                    for data_file in files:
                        append.append_data_file(data_file)
                tx.tag_snapshot()
            return table

        def refresh() -> None:
            assert pending.table is not None
            pending.table = pending.table.refresh()

        table = self.tables.retry(self.tables.name(name), attempt, refresh)
        snapshot = table.current_snapshot()
        commit = TableCommit(
            self.tables.name(name), snapshot.snapshot_id if snapshot else -1, pending.records, len(files)
        )
        pending.files, pending.records = [], 0
        return commit
