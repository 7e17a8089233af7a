"""The batch assets downstream of the jobs' Iceberg tables, with their jobs and schedules:
clicks_lake's daily aggregate (it reads the day's rows through the ``iceberg_io_manager`` the
SamzaJobComponents bind)."""

from jobs.clicks_lake.daily import daily_clicks, daily_clicks_job, daily_clicks_schedule

__all__ = ["daily_clicks", "daily_clicks_job", "daily_clicks_schedule"]
