"""clicks_lake end to end on an in-process Dagster instance, through the repository's definitions
(``definitions.py``, the SamzaJobComponent and the default resources): click events on the log →
the Samza job → the Iceberg table web.clicks → the daily pandas aggregate.

The job's materialization of the table carries the snapshot the table holds now, the rows this run
added and the table's schema; the aggregate of one day equals the one computed from the rows
actually in the table (read independently with pyiceberg) and from the generated events, and it
loaded only that day's rows. A second run adds a day: a new snapshot, only the new rows added."""

from __future__ import annotations

from datetime import date

import dagster as dg
import pandas as pd
import pytest
from pyiceberg.catalog import load_catalog

from jobs.clicks_lake.data import clicks, expected_daily, load_clicks
from jobs.clicks_lake.definitions import CONFIG_PATH
from samza_dagster.config import Config
from samza_dagster.orchestration import (
    ICEBERG_IO_MANAGER_KEY,
    IcebergIOManager,
    SamzaSystemsResource,
    application_definitions,
)
from support.live_runs import LiveRun, live_run
from support.waiting import wait_until

TABLE = dg.AssetKey(["clicks_lake", "clicks"])
DAILY = dg.AssetKey(["clicks_lake", "daily_clicks"])
DAYS = [date(2024, 3, 1), date(2024, 3, 2)]
PER_DAY = 300


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "log"))
    import definitions

    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        yield definitions.defs, instance, tmp_path / "log"


def _table(log_root):
    """web.clicks as an independent reader sees it: the job's default catalog under the log root."""
    base = log_root / "iceberg" / "lake"
    catalog = load_catalog("lake", type="sql", uri=f"sqlite:///{base}/catalog.db", warehouse=f"file://{base}/warehouse")
    return catalog.load_table(("web", "clicks"))


def _run(defs, instance, job: str, partition: str | None = None) -> dg.ExecuteInProcessResult:
    result = defs.resolve_job_def(job).execute_in_process(
        instance=instance, partition_key=partition, raise_on_error=False
    )
    assert result.success, [e.step_failure_data.error.message for e in result.get_step_failure_events()]
    return result


def _latest(instance, key: dg.AssetKey) -> dg.AssetMaterialization:
    return instance.fetch_materializations(key, limit=1).records[0].asset_materialization


def test_stream_to_job_to_table_to_daily_aggregate(repo):
    defs, instance, log_root = repo
    config = SamzaSystemsResource().apply(Config.from_properties(CONFIG_PATH))
    events = clicks(DAYS, PER_DAY)
    load_clicks(config, events)

    # lineage as the UI draws it: input stream → table (written by the job) → daily aggregate
    graph = defs.resolve_asset_graph()
    assert graph.get(TABLE).parent_keys == {dg.AssetKey(["clicks_lake", "click_events"])}
    assert graph.get(DAILY).parent_keys == {TABLE}
    assert {"iceberg", "samza"} <= set(graph.get(TABLE).kinds)

    _run(defs, instance, "clicks_lake_job")
    table = _table(log_root)
    snapshot = table.current_snapshot()
    written = _latest(instance, TABLE)
    md = {k: v.value for k, v in written.metadata.items()}
    assert md["snapshot_id"] == snapshot.snapshot_id
    assert md["rows_added"] == len(events) == md["dagster/row_count"]
    assert md["dagster/table_name"] == "web.clicks"
    assert md["table_commits"] >= 1
    columns = {c.name: c.type for c in written.metadata["dagster/column_schema"].value.columns}
    assert columns == {
        "clicked_at": "timestamptz",
        "user_id": "string",
        "page": "string",
        "country": "string",
        "source_partition": "long",
        "source_offset": "long",
    }
    assert written.tags["dagster/data_version"] == f"snapshot:{snapshot.snapshot_id}"

    day = DAYS[1]
    result = _run(defs, instance, "clicks_lake_daily_clicks", day.isoformat())
    aggregate = result.asset_value(DAILY)
    rows = table.scan().to_pandas()
    in_day = rows[rows["clicked_at"].dt.date == day]
    from_table = (
        in_day.groupby(["country", "page"], as_index=False)
        .agg(clicks=("user_id", "size"), users=("user_id", "nunique"))
        .sort_values(["country", "page"], ignore_index=True)
    )
    pd.testing.assert_frame_equal(aggregate, from_table)
    assert {(r.country, r.page): (r.clicks, r.users) for r in aggregate.itertuples()} == expected_daily(events, day)
    (loaded,) = [e for e in result.all_events if e.event_type_value == "LOADED_INPUT"]
    assert loaded.event_specific_data.metadata["rows_loaded"].value == PER_DAY  # the day, not the table
    assert _latest(instance, DAILY).metadata["clicks"].value == PER_DAY

    # a later run appends a third day: a new snapshot, and only its rows are "added"
    more = clicks([date(2024, 3, 3)], 120, seed=41)
    load_clicks(config, more)
    _run(defs, instance, "clicks_lake_job")
    again = _latest(instance, TABLE)
    now = _table(log_root).current_snapshot()
    assert now.snapshot_id != snapshot.snapshot_id
    assert again.metadata["snapshot_id"].value == now.snapshot_id
    assert again.metadata["rows_added"].value == 120
    assert again.metadata["dagster/row_count"].value == len(events) + 120


def test_a_live_run_materializes_the_table_with_its_snapshot_while_it_writes(tmp_path, monkeypatch):
    """clicks_lake made unbounded: while the run is live, its materializations of the table carry
    the snapshot the table holds and its schema; terminated, the final one the rows it added."""
    monkeypatch.delenv("SAMZA_LOG_PATH", raising=False)  # the resource's log_path is the log root
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    base = Config.from_properties(CONFIG_PATH).with_overrides(
        {
            "streams.click_events.samza.bounded": "false",
            "task.commit.ms": "200",
            "dagster.materialization.interval.ms": "1000",
        }
    )
    defs = dg.Definitions.merge(
        dg.Definitions(
            resources={"samza_systems": systems, ICEBERG_IO_MANAGER_KEY: IcebergIOManager(samza_systems=systems)}
        ),
        application_definitions("clicks_lake", base, declared_outputs=["lake.clicks"], config_path=CONFIG_PATH),
    )
    events = clicks(DAYS[:1], 200)
    load_clicks(systems.apply(base), events)

    def live_with_every_row(live: LiveRun) -> list[dg.AssetMaterialization]:
        return [
            m
            for m in live.materializations(instance)
            if m.metadata["job_status"].value == "running"
            and "dagster/row_count" in m.metadata
            and m.metadata["dagster/row_count"].value == len(events)
        ]

    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        with live_run(defs.resolve_job_def("clicks_lake_job"), instance) as live:
            seen = wait_until(lambda: live_with_every_row(live), what="a live materialization of every row")[-1]
            snapshot = _table(tmp_path / "log").current_snapshot()
            assert seen.metadata["snapshot_id"].value == snapshot.snapshot_id
            assert seen.tags["dagster/data_version"] == f"snapshot:{snapshot.snapshot_id}"
            assert "clicked_at" in {c.name for c in seen.metadata["dagster/column_schema"].value.columns}
        assert live.result.success
        final = _latest(instance, TABLE)
        assert final.metadata["job_status"].value != "running"
        assert final.metadata["rows_added"].value == len(events)
