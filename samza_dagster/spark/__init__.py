"""PySpark over the systems: the ``samza`` Python data source (batch read/write of any
stream), the session helper that registers it, and the backfill building block.

Importing this package does not import pyspark; the submodules do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_or_create_spark", "register_data_source", "resend_to_batch_stream", "read_options"]


def __getattr__(name: str) -> Any:
    if name in ("get_or_create_spark", "register_data_source"):
        from samza_dagster.spark import session

        return getattr(session, name)
    if name == "resend_to_batch_stream":
        from samza_dagster.spark.backfill import resend_to_batch_stream

        return resend_to_batch_stream
    if name == "read_options":
        from samza_dagster.spark.datasource import read_options

        return read_options
    raise AttributeError(name)
