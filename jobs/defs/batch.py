"""The batch assets downstream of the jobs' Iceberg tables, with their jobs and schedules:
clicks_lake's daily aggregate with pandas (it reads the day's rows through the
``iceberg_io_manager`` the SamzaJobComponents bind) and the same aggregate on Spark (Spark SQL
over the table through Apache Iceberg's Spark runtime, on the ``spark`` resource)."""

from jobs.clicks_lake.daily import daily_clicks, daily_clicks_job, daily_clicks_schedule
from jobs.clicks_lake.daily_spark import daily_clicks_spark, daily_clicks_spark_job

__all__ = ["daily_clicks", "daily_clicks_job", "daily_clicks_schedule", "daily_clicks_spark", "daily_clicks_spark_job"]
