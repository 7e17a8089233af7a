"""daily_clicks_spark: daily_clicks on Spark — the path a team takes when a day no longer fits one
process. The same aggregate (clicks and distinct users per country and page, one UTC day per
partition) computed by Spark SQL over the day's rows of web.clicks, read through Apache Iceberg's
own Spark runtime from the catalog the job writes (catalog ``lake``: samza_dagster/spark/iceberg.py),
on the project's ``spark`` resource. Nothing passes through this process: Spark writes the day's
rows to the Iceberg table ``web.daily_clicks``, replacing that day's rows in one commit (a re-run
of a day leaves one copy).

Its upstream is the table asset ``[clicks_lake, clicks]``, so the lineage reads
``click_events`` → ``clicks`` → ``daily_clicks_spark``, beside the pandas ``daily_clicks``.
"""

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import dagster as dg

from jobs.clicks_lake.daily import APPLICATION, DAILY, TABLE_KEY
from samza_dagster.config import Config, keys
from samza_dagster.orchestration import SamzaSystemsResource
from samza_dagster.orchestration.resources import SparkResource

SYSTEM = "lake"
#: the table the job writes, and the one this asset writes, in the system's namespace
SOURCE = "clicks"
TARGET = "daily_clicks"


def aggregate_day(spark: Any, namespace: str, day: date) -> int:
    """``day``'s aggregate written over that day's rows of ``<namespace>.daily_clicks`` (created
    when missing); the rows written."""
    from pyspark.sql import functions as F

    source, target = f"{SYSTEM}.{namespace}.{SOURCE}", f"{SYSTEM}.{namespace}.{TARGET}"
    start, end = day.isoformat(), (day + timedelta(days=1)).isoformat()
    per_page = spark.sql(
        f"""
        SELECT DATE '{start}' AS day, country, page, count(*) AS clicks, count(DISTINCT user_id) AS users
        FROM {source}
        WHERE clicked_at >= TIMESTAMP '{start}T00:00:00Z' AND clicked_at < TIMESTAMP '{end}T00:00:00Z'
        GROUP BY country, page
        """
    )
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {target} "
        "(day DATE, country STRING, page STRING, clicks BIGINT, users BIGINT) USING iceberg PARTITIONED BY (day)"
    )
    per_page.writeTo(target).overwrite(F.col("day") == F.lit(day))
    return int(spark.table(target).where(F.col("day") == F.lit(day)).count())


#: the job's config (clicks_lake.properties): the catalog this asset reads is the one the job writes
CONFIG_PATH = Path(__file__).with_name("clicks_lake.properties")


@dg.asset(
    key=[APPLICATION, "daily_clicks_spark"],
    group_name=APPLICATION,
    partitions_def=DAILY,
    deps=[TABLE_KEY],
    kinds={"spark", "iceberg"},
    owners=["team:streaming"],
    description="daily_clicks on Spark: clicks and distinct users per country and page, one day per partition, "
    "computed by Spark SQL over the day's rows of web.clicks and written to the Iceberg table web.daily_clicks",
)
def daily_clicks_spark(
    context: dg.AssetExecutionContext, spark: SparkResource, samza_systems: SamzaSystemsResource
) -> dg.MaterializeResult:
    config = samza_systems.apply(Config.from_properties(CONFIG_PATH))
    namespace = keys.ICEBERG_NAMESPACE.get(config, system=SYSTEM)
    session = spark.iceberg_session(config, SYSTEM)
    day = date.fromisoformat(context.partition_key)
    rows = aggregate_day(session, namespace, day)
    target = f"{SYSTEM}.{namespace}.{TARGET}"
    snapshot = session.sql(f"SELECT snapshot_id FROM {target}.snapshots ORDER BY committed_at DESC LIMIT 1").first()
    day_rows = session.sql(
        f"SELECT country, page, clicks, users FROM {target} WHERE day = DATE '{day.isoformat()}' ORDER BY country, page"
    ).toPandas()
    return dg.MaterializeResult(
        metadata={
            "day": context.partition_key,
            "clicks": dg.MetadataValue.int(int(day_rows["clicks"].sum()) if rows else 0),
            "dagster/row_count": dg.MetadataValue.int(rows),
            "dagster/table_name": f"{namespace}.{TARGET}",
            "snapshot_id": dg.MetadataValue.int(int(snapshot.snapshot_id)),
            "spark_version": session.version,
            "preview": dg.MetadataValue.md(day_rows.head(25).to_markdown(index=False)),
        }
    )


daily_clicks_spark_job = dg.define_asset_job(
    "clicks_lake_daily_clicks_spark",
    selection=dg.AssetSelection.assets(daily_clicks_spark),
    description="Aggregates one day of the clicks table on Spark (a daily partition)",
)
