"""clicks_lake's daily aggregate on Spark, through the repository's definitions on a real Dagster
instance: the job lands click events in web.clicks (pyiceberg), then ``daily_clicks_spark`` —
Spark SQL through Apache Iceberg's Spark runtime, on the ``spark`` resource — writes the day's
aggregate to web.daily_clicks. It equals the pandas ``daily_clicks`` of the same day and what the
events say; a second materialization of the day replaces the day's rows, and another day's rows
stay as they are."""

from __future__ import annotations

from datetime import date

import dagster as dg
import pandas as pd
import pytest

from jobs.clicks_lake.data import clicks, expected_daily, load_clicks
from jobs.clicks_lake.definitions import CONFIG_PATH
from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource
from samza_dagster.orchestration.tables import TableRef, load_table
from samza_dagster.system.iceberg.config import IcebergSystemConfig

pytestmark = pytest.mark.spark

TABLE = dg.AssetKey(["clicks_lake", "clicks"])
DAILY = dg.AssetKey(["clicks_lake", "daily_clicks"])
SPARK_DAILY = dg.AssetKey(["clicks_lake", "daily_clicks_spark"])
DAYS = [date(2024, 3, 1), date(2024, 3, 2)]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "log"))
    import definitions

    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        yield definitions.defs, instance
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()


def _run(defs, instance, job: str, partition: str | None = None) -> dg.ExecuteInProcessResult:
    result = defs.resolve_job_def(job).execute_in_process(
        instance=instance, partition_key=partition, raise_on_error=False
    )
    assert result.success, [e.step_failure_data.error.message for e in result.get_step_failure_events()]
    return result


def _spark_daily_rows(config: Config, day: date) -> pd.DataFrame:
    """web.daily_clicks's rows of ``day`` as pyiceberg reads them (not through Spark)."""
    table = load_table(IcebergSystemConfig.from_config("lake", config), TableRef("lake", "web", "daily_clicks"))
    assert table is not None
    rows = table.scan(row_filter=f"day = '{day.isoformat()}'").to_pandas()
    return rows.drop(columns="day").sort_values(["country", "page"], ignore_index=True)


def test_the_daily_aggregate_on_spark_equals_the_pandas_one(repo):
    defs, instance = repo
    config = SamzaSystemsResource().apply(Config.from_properties(CONFIG_PATH))
    events = clicks(DAYS, 250)
    load_clicks(config, events)
    assert defs.resolve_asset_graph().get(SPARK_DAILY).parent_keys == {TABLE}
    _run(defs, instance, "clicks_lake_job")

    day = DAYS[1]
    pandas_daily = _run(defs, instance, "clicks_lake_daily_clicks", day.isoformat()).asset_value(DAILY)
    _run(defs, instance, "clicks_lake_daily_clicks_spark", day.isoformat())
    on_spark = _spark_daily_rows(config, day)
    pd.testing.assert_frame_equal(on_spark, pandas_daily, check_dtype=False)
    assert {(r.country, r.page): (r.clicks, r.users) for r in on_spark.itertuples()} == expected_daily(events, day)

    written = instance.fetch_materializations(SPARK_DAILY, limit=1).records[0].asset_materialization
    assert written.partition == day.isoformat()
    assert written.metadata["dagster/row_count"].value == len(on_spark)
    assert written.metadata["clicks"].value == 250
    daily_table = load_table(IcebergSystemConfig.from_config("lake", config), TableRef("lake", "web", "daily_clicks"))
    assert written.metadata["snapshot_id"].value == daily_table.current_snapshot().snapshot_id

    # another day, then the first again: each day's rows once, the other day's untouched
    _run(defs, instance, "clicks_lake_daily_clicks_spark", DAYS[0].isoformat())
    _run(defs, instance, "clicks_lake_daily_clicks_spark", day.isoformat())
    pd.testing.assert_frame_equal(_spark_daily_rows(config, day), on_spark)
    first = _spark_daily_rows(config, DAYS[0])
    assert {(r.country, r.page): (r.clicks, r.users) for r in first.itertuples()} == expected_daily(events, DAYS[0])
