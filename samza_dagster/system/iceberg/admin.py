"""SystemAdmin of the iceberg system: a table is a stream of one partition whose offsets count rows.

A table's upcoming offset is its row count (the current snapshot's ``total-records``), so a
stream's metadata says how many rows the table holds; a table that does not exist yet is an empty
stream (it is created by its first write). ``create_stream`` creates the namespace only: the table
needs the rows' schema.
"""

from __future__ import annotations

from collections.abc import Iterable

from samza_dagster.config.config import Config
from samza_dagster.model import StreamSpec, SystemStreamMetadata, SystemStreamPartition, SystemStreamPartitionMetadata
from samza_dagster.system.iceberg.catalog import IcebergTables
from samza_dagster.system.iceberg.checkpoints import PREFIX, job_key, newest_checkpoint_snapshot
from samza_dagster.system.iceberg.config import IcebergSystemConfig
from samza_dagster.system.int_offsets import compare_int_offsets, offsets_after
from samza_dagster.system.protocols import TableSummary


class IcebergSystemAdmin:
    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.tables = IcebergTables(IcebergSystemConfig.from_config(system_name, config))

    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        result = {}
        for name in stream_names:
            rows = self.row_count(name)
            pm = SystemStreamPartitionMetadata("0", str(rows - 1) if rows else None, str(rows))
            result[name] = SystemStreamMetadata(name, {0: pm})
        return result

    def row_count(self, table: str) -> int:
        loaded = self.tables.load(table)
        snapshot = loaded.current_snapshot() if loaded is not None else None
        if snapshot is None or snapshot.summary is None:
            return 0
        return int(snapshot.summary.get("total-records") or 0)

    def table_name(self, table: str) -> str:
        return self.tables.name(table)

    def table_summary(self, table: str) -> TableSummary | None:
        """The table's snapshots, rows and data files, and the job checkpoints of the newest
        snapshot whose summary carries any (checkpoints.py); None when the table does not exist."""
        loaded = self.tables.load(table)
        if loaded is None:
            return None
        current = loaded.current_snapshot()
        summary = current.summary if current is not None else None
        marked = newest_checkpoint_snapshot(loaded)
        props = marked.summary.additional_properties if marked is not None and marked.summary is not None else {}
        job = props.get("samza.job")
        prefix = job_key(job) if job else PREFIX
        return TableSummary(
            snapshots=len(loaded.metadata.snapshots),
            rows=int(summary.get("total-records") or 0) if summary is not None else 0,
            data_files=int(summary.get("total-data-files") or 0) if summary is not None else 0,
            current_snapshot_id=current.snapshot_id if current is not None else None,
            current_snapshot_ms=current.timestamp_ms if current is not None else None,
            checkpoint_snapshot_id=marked.snapshot_id if marked is not None else None,
            checkpoint_job=job,
            checkpoint_container=props.get("samza.container"),
            checkpoints={k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)},
        )

    def create_stream(self, spec: StreamSpec) -> bool:
        self.tables.catalog  # noqa: B018 - loading the catalog creates the namespace
        return self.tables.load(spec.physical_name) is None

    def stream_exists(self, stream: str) -> bool:
        return self.tables.load(stream) is not None

    offset_comparator = staticmethod(compare_int_offsets)

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        return offsets_after(offsets)
