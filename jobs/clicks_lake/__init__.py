"""clicks_lake: the batch half — a streaming job lands a stream in an Iceberg table, and a daily
aggregate downstream reads one day of it, with pandas and on Spark.

``click_events`` (embedded log, 2 partitions, JSON) → ClickRowTask → the Iceberg table
``web.clicks`` (system ``lake``: a SQLite catalog under the log root, nothing to install), one
table commit per container commit, exactly once. In Dagster the table is an asset downstream of
the job's input; ``daily_clicks``, daily-partitioned, loads only its day's rows through the
``iceberg_io_manager`` (the day pushed down as a row filter on ``clicked_at``) and counts clicks
and users per country and page; ``daily_clicks_spark`` computes the same on Spark (Spark SQL
through Apache Iceberg's Spark runtime, written to the table ``web.daily_clicks``). The UI shows
click_events → the job → clicks → daily_clicks and daily_clicks_spark.
"""
