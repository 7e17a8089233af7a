"""Dagster metadata as this integration builds it, one type for every builder (streams, tables,
runs, checks): entries by name, each a plain value Dagster shows as it is or a
``dg.MetadataValue`` that says how to show it (an int to plot, JSON, a path, a table schema)."""

import dagster as dg

Metadata = dict[str, dg.MetadataValue | str | int | float | None]
