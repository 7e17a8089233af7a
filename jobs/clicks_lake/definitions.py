"""Dagster definitions of clicks_lake: the job's assets from its config (the input stream, the
Iceberg table it writes — declared, as a low-level task's outputs are), the daily aggregate
downstream of the table with its job and schedule, the same aggregate on Spark with its job, and
an op job writing three days of sample clicks (the three days before today, so the schedule's
next partition has data)."""

from pathlib import Path

import dagster as dg

from jobs.clicks_lake.daily import APPLICATION, daily_clicks, daily_clicks_job, daily_clicks_schedule
from jobs.clicks_lake.daily_spark import daily_clicks_spark, daily_clicks_spark_job
from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions

CONFIG_PATH = Path(__file__).with_name("clicks_lake.properties")
#: a low-level task's outputs are in its code, not its config: the table is declared
DECLARED_OUTPUTS = ["lake.clicks"]
SAMPLE_DAYS = 3
SAMPLE_PER_DAY = 2_000


@dg.op
def load_sample_clicks(context: dg.OpExecutionContext, samza_systems: SamzaSystemsResource) -> int:
    from jobs.clicks_lake.data import clicks, load_clicks, recent_days

    config = samza_systems.apply(Config.from_properties(CONFIG_PATH))
    days = recent_days(SAMPLE_DAYS)
    n = load_clicks(config, clicks(days, SAMPLE_PER_DAY))
    context.log.info(f"wrote {n} click events for {days[0]} to {days[-1]} to log.click_events")
    return n


@dg.job(name="clicks_lake_load_sample", description="Writes three days of sample click events")
def load_sample_job() -> None:
    load_sample_clicks()


def definitions() -> dg.Definitions:
    return application_definitions(
        APPLICATION,
        CONFIG_PATH,
        declared_outputs=DECLARED_OUTPUTS,
        assets=[daily_clicks, daily_clicks_spark],
        jobs=[load_sample_job, daily_clicks_job, daily_clicks_spark_job],
        schedules=[daily_clicks_schedule],
    )
