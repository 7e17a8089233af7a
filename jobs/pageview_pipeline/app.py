"""PageViewPipeline: the StreamApplication (see the package docstring)."""

from __future__ import annotations

from typing import Any

from samza_dagster.application import KV, StreamApplication, SystemDescriptor, TableDescriptor, Windows
from samza_dagster.serde import JsonSerde

HOUR_MS = 3_600_000


def _count(_message: Any, acc: int) -> int:
    return acc + 1


def _enrich(view: KV, profile: dict | None) -> dict:
    value = view.value
    country = profile["country"] if profile is not None else "unknown"
    return {"user_id": view.key, "country": country, "page": value["page"], "ts": value["ts"]}


class PageViewPipeline(StreamApplication):
    def describe(self, app: Any) -> None:
        log = SystemDescriptor("log")
        views = app.get_input_stream(log.input("page_views", serde=JsonSerde()))
        counts = app.get_output_stream(log.output("country_counts", serde=JsonSerde(), key_serde=JsonSerde()))
        profiles = app.get_table(TableDescriptor("profiles", side_inputs=["user_profiles"]))
        (
            views.partition_by(key=lambda v: v["user_id"], op_id="by-user")
            .join(profiles, _enrich, key=lambda kv: kv.key, op_id="with-profile")
            .partition_by(key=lambda v: v["country"], op_id="by-country")
            .window(
                Windows.keyed_tumbling(
                    lambda kv: kv.key, HOUR_MS, 0, _count, time="event", timestamp_fn=lambda kv: kv.value["ts"]
                ),
                op_id="hourly",
            )
            .map(lambda pane: KV(pane.key, {"country": pane.key, "hour_start_ms": pane.start_ms, "views": pane.value}))
            .send_to(counts)
        )
