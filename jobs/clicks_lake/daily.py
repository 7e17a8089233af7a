"""daily_clicks: the batch asset downstream of the job's table — one day of clicks per partition,
counted per country and page with pandas, on a daily schedule.

Its input is the table asset ``[clicks_lake, clicks]``; the table's asset names the
``iceberg_io_manager``, which loads only the partition's day (``partition_expr: clicked_at``
pushed down as a row filter), never the whole table.
"""

import dagster as dg
import pandas as pd

APPLICATION = "clicks_lake"
TABLE_KEY = dg.AssetKey([APPLICATION, "clicks"])
#: the first day the daily partitions offer
START_DATE = "2024-01-01"
DAILY = dg.DailyPartitionsDefinition(start_date=START_DATE, timezone="UTC")


@dg.asset(
    key=[APPLICATION, "daily_clicks"],
    group_name=APPLICATION,
    partitions_def=DAILY,
    ins={"clicks": dg.AssetIn(TABLE_KEY, metadata={"partition_expr": "clicked_at"})},
    kinds={"pandas"},
    owners=["team:streaming"],
    description="Clicks and distinct users per country and page, one day per partition, from the day's "
    "rows of the Iceberg table web.clicks",
)
def daily_clicks(context: dg.AssetExecutionContext, clicks: pd.DataFrame) -> pd.DataFrame:
    per_page = (
        clicks.groupby(["country", "page"], as_index=False)
        .agg(clicks=("user_id", "size"), users=("user_id", "nunique"))
        .sort_values(["country", "page"], ignore_index=True)
    )
    context.add_output_metadata(
        {
            "day": context.partition_key,
            "clicks": dg.MetadataValue.int(len(clicks)),
            "users": dg.MetadataValue.int(int(clicks["user_id"].nunique())),
            "dagster/row_count": dg.MetadataValue.int(len(per_page)),
            "preview": dg.MetadataValue.md(per_page.head(25).to_markdown(index=False)),
        }
    )
    return per_page


daily_clicks_job = dg.define_asset_job(
    "clicks_lake_daily_clicks",
    selection=dg.AssetSelection.assets(daily_clicks),
    description="Aggregates one day of the clicks table (a daily partition)",
)

#: shortly after each UTC day ends, that day's partition
daily_clicks_schedule = dg.build_schedule_from_partitioned_job(daily_clicks_job, hour_of_day=0, minute_of_hour=30)
