"""IcebergIOManager: downstream assets read the Iceberg tables Samza jobs write, as pandas or Arrow.

A job's table asset (:mod:`.tables`) names this I/O manager (``iceberg_io_manager``), so an asset
that takes the table as a parameter gets it loaded::

    @dg.asset(
        partitions_def=dg.DailyPartitionsDefinition(start_date="2024-01-01"),
        ins={"clicks": dg.AssetIn(["clicks_lake", "clicks"], metadata={"partition_expr": "clicked_at"})},
    )
    def daily_clicks(clicks: pd.DataFrame) -> pd.DataFrame: ...

* **Which table**: the upstream asset's ``dagster/table_name`` (``<namespace>.<table>``) in the
  catalog its job writes to — read from the job's .properties (the asset's ``config_path``) with
  the deployment's systems on top (the nested ``samza_systems`` resource, as the job's run does),
  so the reader and the writer resolve the same catalog, default SQLite one included. Set
  ``catalog_properties`` to read through another catalog (a read-only REST endpoint, say).
* **Which rows**: a downstream run for a time partition (a day of a daily-partitioned asset, or a
  backfill's range of days) loads only that window: ``start <= column < end`` pushed down to the
  scan as an Iceberg row filter, so data files whose column statistics lie outside the window are
  not read, and rows outside it are filtered out before they reach the asset. The column is the
  input's ``partition_expr`` metadata (Dagster's convention for partitioned I/O managers), else
  ``timestamp_column``; a timestamp, timestamptz, date, or integer epoch column (``timestamp_unit``).
  A partitioned run with no column to filter on is refused: one partition never loads the whole
  table. An unpartitioned downstream loads the whole table.
* **As what**: a ``pyarrow.Table`` when the parameter is annotated so, else a pandas DataFrame.
  An input's ``columns`` metadata selects columns.

The load records the table, snapshot, filter, rows loaded and data files scanned as the input's
metadata. The I/O manager only reads: tables are written by the Samza jobs, so an asset that
returns a value to it is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import dagster as dg
import pyarrow as pa
from pydantic import Field
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression, GreaterThanOrEqual, LessThan, Reference
from pyiceberg.table import Table
from pyiceberg.types import DateType, IntegerType, LongType, TimestampType, TimestamptzType

from samza_dagster.config import Config
from samza_dagster.orchestration.errors import OrchestrationError
from samza_dagster.orchestration.resources import SamzaSystemsResource
from samza_dagster.orchestration.tables import CONFIG_PATH_METADATA, SYSTEM_METADATA, TABLE_NAME, TableRef
from samza_dagster.system.iceberg.config import IcebergSystemConfig

#: input metadata naming the column a time window is filtered on (Dagster's DB I/O managers' key)
PARTITION_EXPR = "partition_expr"
#: input metadata selecting columns
COLUMNS = "columns"
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class IcebergIOManager(dg.ConfigurableIOManager):
    """Loads the Iceberg tables Samza jobs write — a time partition's rows, never the whole table
    for one partition — as pandas DataFrames or Arrow tables (module docstring)."""

    samza_systems: SamzaSystemsResource = Field(
        description="where the systems are: the log root a job's default SQLite catalog lives under"
    )
    catalog_properties: dict[str, str] = Field(
        default_factory=dict,
        description="pyiceberg load_catalog properties (type, uri, warehouse, ...) to read through; "
        "empty: the catalog the writing job's config names (systems.<s>.iceberg.catalog.*, or its default)",
    )
    timestamp_column: str | None = Field(
        default=None,
        description="column a time-partitioned downstream run's window is filtered on, when its input "
        "names none (AssetIn metadata partition_expr)",
    )
    timestamp_unit: Literal["s", "ms", "us"] = Field(
        default="ms", description="unit of an integer timestamp column (epoch seconds, milliseconds, microseconds)"
    )

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:
            return
        raise OrchestrationError(
            f"asset {context.asset_key.to_user_string()} returned a value to the Iceberg I/O manager, which "
            "only reads: its tables are written by Samza jobs; store the value with another I/O manager"
        )

    def load_input(self, context: dg.InputContext) -> Any:
        """A pandas DataFrame, or a pyarrow Table when the input is annotated so."""
        ref = self.table_ref(context)
        table = self.load_table(context, ref)
        window = time_window(context)
        row_filter: BooleanExpression = AlwaysTrue()
        described = "none: the whole table"
        if window is not None:
            column = context.definition_metadata.get(PARTITION_EXPR) or self.timestamp_column
            if not column:
                raise OrchestrationError(
                    f"asset {context.asset_key.to_user_string()} (Iceberg table {ref.name}) is loaded for the "
                    f"time window {window.start.isoformat()} – {window.end.isoformat()}: name its timestamp column "
                    f"(AssetIn metadata {PARTITION_EXPR!r}, or the I/O manager's timestamp_column) — one "
                    "partition never loads the whole table"
                )
            row_filter, described = window_filter(table, str(column), window.start, window.end, self.timestamp_unit)
        columns: Sequence[str] = context.definition_metadata.get(COLUMNS) or ("*",)
        scan = table.scan(row_filter=row_filter, selected_fields=tuple(columns))
        files = sum(1 for _ in scan.plan_files())
        data = scan.to_arrow()
        snapshot = table.current_snapshot()
        context.add_input_metadata(
            {
                "table": ref.name,
                "snapshot_id": snapshot.snapshot_id if snapshot is not None else "none",
                "row_filter": described,
                "rows_loaded": data.num_rows,
                "data_files_scanned": files,
            }
        )
        return data if _wants_arrow(context) else data.to_pandas()

    def table_ref(self, context: dg.InputContext) -> TableRef:
        namespace, _, table = str(_upstream(context, TABLE_NAME) or "").rpartition(".")
        if not namespace or not table:
            raise OrchestrationError(
                f"asset {context.asset_key.to_user_string()} names no Iceberg table: its metadata needs "
                "dagster/table_name (<namespace>.<table>), as the assets of a Samza job's tables have"
            )
        return TableRef(str(_upstream(context, SYSTEM_METADATA) or "iceberg"), namespace, table)

    def load_table(self, context: dg.InputContext, ref: TableRef) -> Table:
        catalog_name, props = self.catalog(context, ref)
        try:
            return load_catalog(catalog_name, **props).load_table(ref.identifier)
        except (NoSuchTableError, NoSuchNamespaceError) as exc:
            # the catalog's type, not its uri: a uri may carry a password
            raise OrchestrationError(
                f"asset {context.asset_key.to_user_string()}: Iceberg table {ref.name} does not exist in catalog "
                f"{catalog_name!r} (type {props.get('type', 'unset')}): materialize the job that writes it first"
            ) from exc

    def catalog(self, context: dg.InputContext, ref: TableRef) -> tuple[str, dict[str, str]]:
        """The catalog's name and properties: this I/O manager's, else the writing job's."""
        if self.catalog_properties:
            return ref.system, dict(self.catalog_properties)
        path = _upstream(context, CONFIG_PATH_METADATA)
        config = Config.from_properties(str(path)) if path else Config({})
        iceberg = IcebergSystemConfig.from_config(ref.system, self.samza_systems.apply(config))
        return ref.system, iceberg.catalog_properties


def _upstream(context: dg.InputContext, key: str) -> object:
    """A definition metadata value of the upstream asset (a MetadataValue's own value), or None."""
    upstream = context.upstream_output.definition_metadata if context.upstream_output is not None else {}
    value = upstream.get(key)
    return value.value if isinstance(value, dg.MetadataValue) else value


def _wants_arrow(context: dg.InputContext) -> bool:
    try:
        wanted = context.dagster_type.typing_type
    except dg.DagsterInvariantViolationError:
        return False
    return isinstance(wanted, type) and issubclass(wanted, pa.Table)


def time_window(context: dg.InputContext) -> dg.TimeWindow | None:
    """The window a partitioned load covers: the upstream asset's partitions when it has any, else
    the downstream run's time partition (or range); None for an unpartitioned run."""
    if context.has_asset_partitions:
        return context.asset_partitions_time_window
    step = context.step_context
    if not (step.has_partition_key or step.has_partition_key_range):
        return None
    try:
        return step.partition_time_window
    except dg.DagsterInvariantViolationError as exc:
        raise OrchestrationError(
            f"asset {context.asset_key.to_user_string()} is loaded for a run whose partitions are not "
            f"time windows: the Iceberg I/O manager filters tables by time only ({exc})"
        ) from exc


def window_filter(
    table: Table, column: str, start: datetime, end: datetime, unit: str
) -> tuple[BooleanExpression, str]:
    """``start <= column < end`` as an Iceberg row filter in the column's own type, and as text."""
    try:
        field = table.schema().find_field(column)
    except ValueError as exc:
        raise OrchestrationError(
            f"Iceberg table {table.name()} has no column {column!r} to filter a time window on "
            f"(columns: {', '.join(f.name for f in table.schema().fields)})"
        ) from exc
    kind = field.field_type
    low: Any
    high: Any
    if isinstance(kind, TimestamptzType):
        low, high = start.astimezone(UTC).isoformat(), end.astimezone(UTC).isoformat()
    elif isinstance(kind, TimestampType):  # no zone: wall-clock UTC, as Spark and pyiceberg write it
        low, high = (t.astimezone(UTC).replace(tzinfo=None).isoformat() for t in (start, end))
    elif isinstance(kind, DateType):  # the days the window touches
        first, last = start.astimezone(UTC), end.astimezone(UTC)
        low = first.date().isoformat()
        high = (last.date() + timedelta(days=0 if last.time() == datetime.min.time() else 1)).isoformat()
    elif isinstance(kind, (LongType, IntegerType)):
        low, high = (_epoch(t, unit) for t in (start, end))
    else:
        raise OrchestrationError(
            f"Iceberg table {table.name()}: column {column!r} is {kind}, not a timestamp, date or integer epoch "
            "column a time window can be filtered on"
        )
    term = Reference(column)
    text = f"{column} >= {low!r} AND {column} < {high!r}"
    return And(GreaterThanOrEqual(term=term, value=low), LessThan(term=term, value=high)), text


def _epoch(moment: datetime, unit: str) -> int:
    """``moment`` as an integer epoch in ``unit`` (exact: no float seconds)."""
    micros = (moment.astimezone(UTC) - _EPOCH) // timedelta(microseconds=1)
    return micros * _PER_SECOND[unit] // 1_000_000
