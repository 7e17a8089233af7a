"""clicks_lake end to end, the demo's batch half: three days of click events arriving a day at a
time, the job landing each day in the Iceberg table web.clicks (one run per day, each resuming from
its checkpoint: a commit, a data file per day), then the daily aggregate of the middle day
materialized by Dagster in process — its input loaded by the ``iceberg_io_manager`` with the day
pushed down, so the other days' files are not read — and checked against the events of that day."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg

from jobs.clicks_lake.daily import TABLE_KEY, daily_clicks
from jobs.clicks_lake.data import clicks, expected_daily, load_clicks
from jobs.clicks_lake.definitions import CONFIG_PATH
from jobs.demo.runner import run_job
from samza_dagster.config import Config
from samza_dagster.orchestration import ICEBERG_IO_MANAGER_KEY, IcebergIOManager, SamzaSystemsResource
from samza_dagster.orchestration.tables import IcebergSystems, TableRef, load_table
from samza_dagster.system.iceberg.config import IcebergSystemConfig

DAYS = (date(2024, 3, 1), date(2024, 3, 2), date(2024, 3, 3))
TABLE = TableRef("lake", "web", "clicks")


@dataclass
class ClicksLakeReport:
    events: int
    days: list[str]
    table: str
    rows_in_table: int
    snapshot_id: int
    data_files: int
    day: str
    day_events: int
    rows_loaded: int
    data_files_scanned: int
    aggregate_rows: int
    aggregate_matches: bool
    status: str
    messages_processed: int
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_config(log_root: Path | str, **overrides: str) -> Config:
    return Config.from_properties(CONFIG_PATH).with_overrides({"systems.log.log.path": str(log_root), **overrides})


def run_scenario(
    log_root: Path | str, *, size: int = 3000, runner: str = "thread", spark: Any = None, **overrides: str
) -> ClicksLakeReport:
    config = load_config(log_root, **overrides)
    events = clicks(DAYS, max(1, size // len(DAYS)))
    per_day = len(events) // len(DAYS)
    processed, elapsed, status = 0, 0.0, []
    for n in range(len(DAYS)):  # each day's clicks as they arrive, landed by a run of the job
        load_clicks(config, events[n * per_day : (n + 1) * per_day])
        outcome = run_job(config, runner=runner, spark=spark)
        processed, elapsed = processed + outcome.messages_processed, elapsed + outcome.elapsed_s
        status.append(outcome.status)

    table = load_table(IcebergSystemConfig.from_config(TABLE.system, config), TABLE)
    if table is None:
        raise RuntimeError(f"job {outcome.job_name} wrote no table {TABLE.name}")
    snapshot = table.current_snapshot()
    day = DAYS[1]
    aggregate, loaded = _daily_aggregate(str(log_root), day)
    expected = expected_daily(events, day)
    got = {(r.country, r.page): (r.clicks, r.users) for r in aggregate.itertuples()}
    return ClicksLakeReport(
        events=len(events),
        days=[d.isoformat() for d in DAYS],
        table=TABLE.name,
        rows_in_table=int(snapshot.summary.get("total-records") or 0) if snapshot and snapshot.summary else 0,
        snapshot_id=snapshot.snapshot_id if snapshot else -1,
        data_files=sum(1 for _ in table.scan().plan_files()),
        day=day.isoformat(),
        day_events=sum(n for n, _ in expected.values()),
        rows_loaded=int(loaded["rows_loaded"]),
        data_files_scanned=int(loaded["data_files_scanned"]),
        aggregate_rows=len(aggregate),
        aggregate_matches=got == expected,
        status=",".join(sorted(set(status))),
        messages_processed=processed,
        elapsed_s=elapsed,
    )


def _daily_aggregate(log_root: str, day: date) -> tuple[Any, dict[str, Any]]:
    """``daily_clicks`` for ``day`` on an ephemeral instance, and what its input load recorded."""
    # the table's asset as the job's definitions declare it: its name, system and config path
    iceberg = IcebergSystems.from_config(Config.from_properties(CONFIG_PATH), str(CONFIG_PATH))
    table_spec = dg.AssetSpec(TABLE_KEY, metadata=iceberg.spec_metadata(TABLE)).with_io_manager_key(
        ICEBERG_IO_MANAGER_KEY
    )
    systems = SamzaSystemsResource(log_path=log_root)
    result = dg.materialize(
        [table_spec, daily_clicks],
        selection=[daily_clicks],
        partition_key=day.isoformat(),
        resources={ICEBERG_IO_MANAGER_KEY: IcebergIOManager(samza_systems=systems)},
        instance=dg.DagsterInstance.ephemeral(),
        # the demo's report is the output: the run's own event log stays quiet
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    (event,) = [e for e in result.all_events if e.event_type_value == "LOADED_INPUT"]
    loaded = {k: v.value for k, v in event.event_specific_data.metadata.items()}
    return result.asset_value(daily_clicks.key), loaded
