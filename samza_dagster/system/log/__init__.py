"""The embedded log system (SQLite-backed, durable, multi-process) — the default system."""
