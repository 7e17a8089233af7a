"""ClickRowTask: each click event becomes one row of an Iceberg table, with typed columns."""

from __future__ import annotations

from datetime import UTC, datetime

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import InitableTask, StreamTask


class ClickRowTask(StreamTask, InitableTask):
    """A click (JSON: user_id, page, country, ts in epoch ms) → a row of ``lake.<clicks_lake.table>``
    whose event time is a real timestamp column (``clicked_at``, timestamptz), which batch readers
    filter a day on, plus where the click came from (partition and offset of the input)."""

    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        self.table = SystemStream("lake", context.config.get_str("clicks_lake.table", "clicks"))

    def process(self, envelope, collector, coordinator) -> None:  # type: ignore[no-untyped-def]
        click = envelope.message
        row = {
            "clicked_at": datetime.fromtimestamp(click["ts"] / 1000, UTC),
            "user_id": click["user_id"],
            "page": click["page"],
            "country": click["country"],
            "source_partition": envelope.ssp.partition,
            "source_offset": int(envelope.offset),
        }
        collector.send(OutgoingMessageEnvelope(self.table, row))
