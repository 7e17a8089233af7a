"""The reprocessing building block: re-send past records into a batch stream.

A backfill reads past input (e.g. ``spark.read.format("samza")`` with an offset range, or any
table) and re-sends it as work items into the job's batch stream, which the job reads at low
priority so real-time traffic is never starved. The records are partitioned by key as the
system's producer would (Kafka's murmur2), not by where they came from: the batch stream may
have another partition count than the source.

With a ``transactional_id`` the re-send is exactly-once (spark/transactional.py): a launch killed
anywhere and launched again leaves each record in the batch stream once to ``read_committed``
readers, and a launch after a completed one writes nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.spark.datasource import read_options
from samza_dagster.spark.options import SamzaDataSourceError
from samza_dagster.spark.transactional import SparkWriteTransaction


def resend_to_batch_stream(
    df: Any,
    *,
    system: str,
    stream: str,
    config: Mapping[str, str],
    key_column: str | None = None,
    value_columns: Sequence[str] | None = None,
    transactional_id: str | None = None,
) -> dict[str, Any]:
    """Write every row of ``df`` to ``system``/``stream`` and return what was sent:
    ``{"system", "stream", "total", "partitions": {partition: count}, "already_written"}``.

    ``transactional_id`` (the write's idempotence key, e.g. job, stream and day) makes the write
    exactly-once on the embedded log (spark/transactional.py): readable to ``read_committed``
    readers all at once when Spark commits it, and written only once however often it is
    launched — a launch after a committed one writes nothing and returns ``"already_written":
    True`` with ``"written"`` (that write's ``total`` and ``partitions``) and ``"written_at_ms"``.
    Without it the write is at-least-once: a re-run sends again.

    The message value is the ``value`` column (binary or string), or, with ``value_columns``,
    a compact JSON object of those columns. ``key_column`` (default: a ``key`` column if there
    is one) gives the key that picks the partition. A ``timestamp`` column keeps each record's
    original event time. The counts come from the writer tasks after each flushed its producer.
    """
    columns = list(df.columns)
    if value_columns is None and "value" not in columns:
        raise SamzaDataSourceError(
            f"backfill into stream {stream!r}: the DataFrame has no 'value' column (columns: {columns}); "
            "pass value_columns=[...] to JSON-encode columns as the value"
        )
    if "partition" in columns:
        # The source's partition says nothing about the batch stream's partitioning.
        df = df.drop("partition")
    result: dict[str, Any] = {"system": system, "stream": stream, "already_written": False}
    if transactional_id is not None:
        # settle an earlier launch, and skip the Spark job when it committed the write already
        earlier = SparkWriteTransaction(Config(dict(config)), system, transactional_id).begin()
        if earlier is not None:
            return {
                **result,
                "total": 0,
                "partitions": {},
                "already_written": True,
                "write_id": transactional_id,
                "written": _counts(earlier.value),
                "written_at_ms": earlier.committed_ms,
            }
    fd, report = tempfile.mkstemp(prefix="samza-backfill-", suffix=".json")
    os.close(fd)
    try:
        writer = df.write.format("samza").options(**read_options(system, stream, config)).option("reportPath", report)
        if key_column:
            writer = writer.option("keyColumn", key_column)
        if value_columns:
            writer = writer.option("valueColumns", ",".join(value_columns))
        if transactional_id is not None:
            writer = writer.option("transactionalId", transactional_id)
        writer.mode("append").save()
        with open(report, encoding="utf-8") as fh:
            text = fh.read()
        # An empty DataFrame may leave no summary behind: nothing was sent.
        summary: dict[str, Any] = json.loads(text) if text.strip() else {"total": 0, "partitions": {}}
    finally:
        os.unlink(report)
    result.update(_counts(summary))
    if transactional_id is not None:
        result["write_id"] = transactional_id
        if summary.get("already_written"):  # another launch committed it while this one ran
            result.update(
                already_written=True, written=_counts(summary["written"]), written_at_ms=summary["written_at_ms"]
            )
    return result


def _counts(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {"total": summary["total"], "partitions": {int(p): c for p, c in summary["partitions"].items()}}
