"""IcebergIOManager on a real pyiceberg table (SQLite catalog) and a real Dagster run: a daily
partition loads only its day — the day's rows, nothing outside it, the other days' data files not
scanned — whatever the timestamp column's type (timestamptz, timestamp, date, epoch ms); Arrow when
the parameter says so; the whole table for an unpartitioned downstream; and a partitioned load
with no column to filter on is refused rather than reading everything."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import pandas as pd
import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog

from samza_dagster.orchestration import ICEBERG_IO_MANAGER_KEY, IcebergIOManager, SamzaSystemsResource

TABLE = dg.AssetSpec(
    ["shop", "orders"], metadata={"dagster/table_name": "shop.orders", "system": "wh"}
).with_io_manager_key(ICEBERG_IO_MANAGER_KEY)
DAILY = dg.DailyPartitionsDefinition(start_date="2024-03-01", timezone="UTC")
DAY = "2024-03-02"
MIDNIGHT = datetime(2024, 3, 2, tzinfo=UTC)


def _rows(moments: list[datetime], first_id: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(first_id, first_id + len(moments)), pa.int64()),
            "at": pa.array(moments, pa.timestamp("us", tz="UTC")),
            "at_naive": pa.array([m.replace(tzinfo=None) for m in moments], pa.timestamp("us")),
            "at_ms": pa.array([int(m.timestamp() * 1000) for m in moments], pa.int64()),
            "on_day": pa.array([m.date() for m in moments], pa.date32()),
            "amount": pa.array([float(i) for i in range(len(moments))], pa.float64()),
        }
    )


@pytest.fixture
def catalog_props(tmp_path) -> dict[str, str]:
    """shop.orders: day 1, day 2 (its first and last microsecond among them) and day 3's first
    moment, each day appended by its own commit — three data files."""
    props = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    catalog = load_catalog("wh", **props)
    catalog.create_namespace("shop")
    day1 = [MIDNIGHT - timedelta(days=1) + timedelta(hours=h) for h in range(24)]
    day2 = [MIDNIGHT + timedelta(hours=h) for h in range(24)] + [MIDNIGHT + timedelta(days=1, microseconds=-1)]
    day3 = [MIDNIGHT + timedelta(days=1)]
    table = catalog.create_table(("shop", "orders"), schema=_rows(day1, 0).schema)
    first = 0
    for moments in (day1, day2, day3):
        table.append(_rows(moments, first))
        first += len(moments)
    return props


def _io(props: dict[str, str], **fields) -> IcebergIOManager:
    return IcebergIOManager(samza_systems=SamzaSystemsResource(), catalog_properties=props, **fields)


def _materialize(asset, props, partition: str | None = DAY, **fields) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [TABLE, asset],
        selection=[asset],
        partition_key=partition,
        resources={ICEBERG_IO_MANAGER_KEY: _io(props, **fields)},
        raise_on_error=False,
    )


def _failure(result: dg.ExecuteInProcessResult) -> str:
    """The failed step's error with its causes (an I/O manager's error is the cause of Dagster's)."""
    assert not result.success
    error, text = result.get_step_failure_events()[0].step_failure_data.error, []
    while error is not None:
        text.append(error.message)
        error = error.cause
    return "\n".join(text)


def _loaded(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    (event,) = [e for e in result.all_events if e.event_type_value == "LOADED_INPUT"]
    return {k: v.value for k, v in event.event_specific_data.metadata.items()}


@pytest.mark.parametrize("column", ["at", "at_naive", "on_day", "at_ms"])
def test_a_daily_partition_loads_only_its_day(catalog_props, column):
    @dg.asset(partitions_def=DAILY, ins={"orders": dg.AssetIn(TABLE.key, metadata={"partition_expr": column})})
    def daily(orders: pd.DataFrame) -> pd.DataFrame:
        return orders

    result = _materialize(daily, catalog_props)
    assert result.success
    frame = result.asset_value(daily.key)
    assert isinstance(frame, pd.DataFrame)
    # day 2's 25 rows (ids 24..48), its first and last microsecond included, day 1 and day 3 not
    assert sorted(frame["id"]) == list(range(24, 49))
    assert frame["at"].min() == pd.Timestamp(MIDNIGHT)
    assert frame["at"].max() == pd.Timestamp(MIDNIGHT + timedelta(days=1, microseconds=-1))
    loaded = _loaded(result)
    assert loaded["rows_loaded"] == 25
    # the other days' data files are pruned by their column statistics, not read and filtered
    assert loaded["data_files_scanned"] == 1
    assert column in str(loaded["row_filter"])


def test_arrow_when_the_parameter_asks_for_it_and_only_the_columns_asked_for(catalog_props):
    @dg.asset(
        partitions_def=DAILY,
        ins={"orders": dg.AssetIn(TABLE.key, metadata={"partition_expr": "at", "columns": ["id", "amount"]})},
    )
    def daily_arrow(orders: pa.Table) -> pa.Table:
        return orders

    result = _materialize(daily_arrow, catalog_props)
    assert result.success
    table = result.asset_value(daily_arrow.key)
    assert isinstance(table, pa.Table)
    assert table.column_names == ["id", "amount"] and table.num_rows == 25


def test_the_io_managers_timestamp_column_serves_inputs_that_name_none(catalog_props):
    @dg.asset(partitions_def=DAILY, ins={"orders": dg.AssetIn(TABLE.key)})
    def daily(orders: pd.DataFrame) -> pd.DataFrame:
        return orders

    result = _materialize(daily, catalog_props, timestamp_column="at_ms", timestamp_unit="ms")
    assert result.success
    assert sorted(result.asset_value(daily.key)["id"]) == list(range(24, 49))


def test_an_unpartitioned_downstream_loads_the_whole_table(catalog_props):
    @dg.asset(ins={"orders": dg.AssetIn(TABLE.key)})
    def everything(orders: pd.DataFrame) -> int:
        return len(orders)

    result = _materialize(everything, catalog_props, partition=None)
    assert result.success
    assert result.asset_value(everything.key) == 24 + 25 + 1
    assert _loaded(result)["data_files_scanned"] == 3


def test_a_partitioned_load_without_a_column_is_refused_not_read_whole(catalog_props):
    @dg.asset(partitions_def=DAILY, ins={"orders": dg.AssetIn(TABLE.key)})
    def daily(orders: pd.DataFrame) -> int:
        return len(orders)

    result = _materialize(daily, catalog_props)
    assert not result.success
    message = _failure(result)
    assert "shop.orders" in message and "partition_expr" in message and "timestamp_column" in message


def test_a_missing_table_and_a_column_that_is_no_time_are_named(catalog_props):
    @dg.asset(partitions_def=DAILY, ins={"orders": dg.AssetIn(TABLE.key, metadata={"partition_expr": "amount"})})
    def by_amount(orders: pd.DataFrame) -> int:
        return len(orders)

    result = _materialize(by_amount, catalog_props)
    message = _failure(result)
    assert "column 'amount' is double" in message, message

    missing = TABLE.replace_attributes(key=["shop", "returns"]).merge_attributes(
        metadata={"dagster/table_name": "shop.returns"}
    )

    @dg.asset(ins={"returns": dg.AssetIn(missing.key)})
    def returned(returns: pd.DataFrame) -> int:
        return len(returns)

    result = dg.materialize(
        [missing, returned],
        selection=[returned],
        resources={ICEBERG_IO_MANAGER_KEY: _io(catalog_props)},
        raise_on_error=False,
    )
    message = _failure(result)
    assert "Iceberg table shop.returns does not exist" in message, message


def test_the_io_manager_only_reads(catalog_props):
    @dg.asset(io_manager_key=ICEBERG_IO_MANAGER_KEY)
    def writes() -> pd.DataFrame:
        return pd.DataFrame({"id": [1]})

    result = dg.materialize([writes], resources={ICEBERG_IO_MANAGER_KEY: _io(catalog_props)}, raise_on_error=False)
    message = _failure(result)
    assert "only reads" in message, message


def test_an_hourly_window_on_a_date_column_covers_the_date_it_falls_in(catalog_props):
    hourly = dg.HourlyPartitionsDefinition(start_date="2024-03-01-00:00", timezone="UTC")

    @dg.asset(partitions_def=hourly, ins={"orders": dg.AssetIn(TABLE.key, metadata={"partition_expr": "on_day"})})
    def hour(orders: pd.DataFrame) -> pd.DataFrame:
        return orders

    result = _materialize(hour, catalog_props, partition="2024-03-02-05:00")
    assert result.success
    assert sorted(result.asset_value(hour.key)["id"]) == list(range(24, 49))
