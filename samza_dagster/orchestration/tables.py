"""A job's Iceberg outputs as Dagster assets: which written streams are tables, and what their
materializations say.

A stream the job writes on an ``iceberg`` system is the table ``<namespace>.<stream>`` (the
system's ``iceberg.namespace``). Its asset is the table: kind ``iceberg``, ``dagster/table_name``,
the path of the job's .properties (``config_path``, from which a reader finds the same catalog),
and the I/O manager key ``iceberg_io_manager``, so a downstream asset that takes it as a parameter
loads the table through :class:`~samza_dagster.orchestration.IcebergIOManager`. A materialization
carries what the run appended — the container summaries' table commits: rows, commits, data
files — and the table as it stands after the run: the current snapshot id (the data version),
the row count and the schema as a Dagster ``TableSchema``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from samza_dagster.config import Config, keys
from samza_dagster.orchestration.metadata import Metadata
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.system.iceberg.config import IcebergSystemConfig

ICEBERG_FACTORY = "iceberg"
#: the resource key of the I/O manager a table asset is loaded with downstream
ICEBERG_IO_MANAGER_KEY = "iceberg_io_manager"
#: asset metadata: the writing job's .properties (where a reader finds the table's catalog)
CONFIG_PATH_METADATA = "config_path"
#: asset metadata: the iceberg system the table belongs to
SYSTEM_METADATA = "system"
#: Dagster's standard table metadata keys (what the UI shows as the table's name, columns, rows)
TABLE_NAME = "dagster/table_name"
COLUMN_SCHEMA = "dagster/column_schema"
ROW_COUNT = "dagster/row_count"


@dataclass(frozen=True)
class TableRef:
    """One Iceberg table a job writes: its system, namespace and name."""

    system: str
    namespace: str
    table: str

    @property
    def name(self) -> str:
        return f"{self.namespace}.{self.table}"

    @property
    def identifier(self) -> tuple[str, str]:
        return (self.namespace, self.table)


@dataclass(frozen=True)
class IcebergSystems:
    """The iceberg systems of a job's config (system → namespace) and the file it came from."""

    namespaces: Mapping[str, str]
    config_path: str | None = None

    @classmethod
    def from_config(cls, config: Config, config_path: str | None = None) -> IcebergSystems:
        systems = {}
        for key, value in config.items():
            if key.startswith("systems.") and key.endswith(".samza.factory") and value.strip() == ICEBERG_FACTORY:
                system = key[len("systems.") : -len(".samza.factory")]
                systems[system] = keys.ICEBERG_NAMESPACE.get(config, system=system)
        return cls(systems, config_path)

    def table(self, stream: StreamInfo) -> TableRef | None:
        namespace = self.namespaces.get(stream.system)
        return None if namespace is None else TableRef(stream.system, namespace, stream.physical_name)

    def spec_metadata(self, ref: TableRef) -> Metadata:
        """What a reader of the table needs on its asset: the table's name, its system and the
        job's .properties, which name the system's catalog."""
        md: Metadata = {TABLE_NAME: ref.name, SYSTEM_METADATA: ref.system}
        if self.config_path is not None:
            md[CONFIG_PATH_METADATA] = dg.MetadataValue.path(self.config_path)
        return md


def load_table(iceberg: IcebergSystemConfig, ref: TableRef) -> Table | None:
    """The table from the system's catalog as a reader sees it now (None: not created yet). A
    reader loads the catalog itself: it creates nothing (the writer creates the namespace)."""
    catalog = load_catalog(iceberg.system, **iceberg.catalog_properties)
    try:
        return catalog.load_table(ref.identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None


def table_schema(schema: Schema) -> dg.TableSchema:
    """An Iceberg schema as Dagster's column schema (types in Iceberg's names, required columns
    not nullable)."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=f.name,
                type=str(f.field_type),
                description=f.doc,
                constraints=dg.TableColumnConstraints(nullable=not f.required),
            )
            for f in schema.fields
        ]
    )


def table_state(table: Table) -> tuple[Metadata, str]:
    """The table as it stands: snapshot id, row count, schema (metadata) and its data version."""
    snapshot = table.current_snapshot()
    summary = snapshot.summary if snapshot is not None else None
    rows = int(summary.get("total-records") or 0) if summary is not None else 0
    md: Metadata = {
        "snapshot_id": dg.MetadataValue.int(snapshot.snapshot_id) if snapshot is not None else "none",
        COLUMN_SCHEMA: dg.MetadataValue.table_schema(table_schema(table.schema())),
        ROW_COUNT: dg.MetadataValue.int(rows),
        "table_location": dg.MetadataValue.path(table.location()),
    }
    return md, f"snapshot:{snapshot.snapshot_id}" if snapshot is not None else "snapshot:none"


@dataclass(frozen=True)
class RunCommits:
    """What one run's containers committed to one table (their summaries' ``table_commits``)."""

    commits: int = 0
    rows: int = 0
    data_files: int = 0

    def metadata(self) -> Metadata:
        return {
            "rows_added": dg.MetadataValue.int(self.rows),
            "table_commits": dg.MetadataValue.int(self.commits),
            "data_files_added": dg.MetadataValue.int(self.data_files),
        }


def run_commits(container_metrics: Iterable[Mapping[str, Any]]) -> dict[str, RunCommits]:
    """Table name (``<namespace>.<table>``) → what the containers committed, summed over them."""
    totals: dict[str, RunCommits] = {}
    for metrics in container_metrics:
        for name, seen in (metrics.get("table_commits") or {}).items():
            was = totals.get(name, RunCommits())
            totals[name] = RunCommits(
                was.commits + int(seen.get("commits", 0)),
                was.rows + int(seen.get("rows", 0)),
                was.data_files + int(seen.get("data_files", 0)),
            )
    return totals


def table_materialization(
    config: Config, ref: TableRef, commits: RunCommits | None, warn: Callable[[str], object]
) -> tuple[Metadata, str | None]:
    """Metadata of a table's materialization — what ``commits`` added (None: a live report, whose
    rows are the offsets' difference) and the table now — and its data version (None: the table
    does not exist yet, the job wrote no row). A catalog that cannot be read now is a ``warn``ing,
    not a failed run: the job has committed what it wrote."""
    md: Metadata = {TABLE_NAME: ref.name}
    if commits is not None:
        md.update(commits.metadata())
    try:
        table = load_table(IcebergSystemConfig.from_config(ref.system, config), ref)
    except Exception as exc:  # noqa: BLE001 - the run's result stands without the table's state
        warn(f"Iceberg table {ref.name}: cannot read its snapshot and schema: {exc}")
        return md, None
    if table is None:
        return md, None
    state, version = table_state(table)
    return {**md, **state}, version
