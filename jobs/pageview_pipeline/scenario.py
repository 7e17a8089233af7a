"""pageview_pipeline end to end: generate profiles and views, run the bounded application until
it stops by itself, compare the hourly per-country counts with the ones computed here."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jobs.demo.runner import run_job
from jobs.pageview_pipeline.app import HOUR_MS
from jobs.pageview_pipeline.data import START_MS, page_views, profiles
from jobs.stream_helpers import create_streams, produce, read_stream
from samza_dagster.config import Config

CONFIG_PATH = Path(__file__).with_name("pageview_pipeline.properties")


@dataclass
class PageViewReport:
    page_views: int
    profiles: int
    #: intermediate stream id → the partition count the planner inferred
    intermediate_partitions: dict[str, int]
    input_partitions: dict[str, int]
    windows: int
    counted_views: int
    counts_match: bool
    status: str
    messages_processed: int
    elapsed_s: float
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_config(log_root: Path | str, **overrides: str) -> Config:
    return Config.from_properties(CONFIG_PATH).with_overrides({"systems.log.log.path": str(log_root), **overrides})


def run_scenario(
    log_root: Path | str,
    *,
    size: int = 4000,
    runner: str = "thread",
    spark: Any = None,
    users: int = 500,
    seed: int = 7,
    **overrides: str,
) -> PageViewReport:
    config = load_config(log_root, **overrides)
    create_streams(config, {"page_views": 2, "user_profiles": 4, "country_counts": 2})
    people = profiles(users)
    produce(
        config, "user_profiles", [(json.dumps(p["user_id"]).encode(), json.dumps(p).encode(), None) for p in people]
    )
    views = page_views(size, users=users, seed=seed)
    produce(config, "page_views", [(None, json.dumps(v).encode(), v["ts"]) for v in views])
    outcome = run_job(config, runner=runner, spark=spark)

    country = {p["user_id"]: p["country"] for p in people}
    expected = Counter((country[v["user_id"]], START_MS + (v["ts"] - START_MS) // HOUR_MS * HOUR_MS) for v in views)
    got = Counter()
    for r in read_stream(config, "country_counts"):
        pane = json.loads(r.value)
        got[(pane["country"], pane["hour_start_ms"])] += pane["views"]
    plan = outcome.plan
    return PageViewReport(
        page_views=len(views),
        profiles=len(people),
        intermediate_partitions=dict(plan.intermediate_streams),
        input_partitions={
            sid: plan.streams[sid].partitions for sid in ("page_views", "user_profiles", "country_counts")
        },
        windows=len(got),
        counted_views=sum(got.values()),
        counts_match=got == expected,
        status=outcome.status,
        messages_processed=outcome.messages_processed,
        elapsed_s=outcome.elapsed_s,
        counts=_per_country(got),
    )


def _per_country(got: Counter) -> dict[str, int]:
    total: Counter = Counter()
    for (country, _), n in got.items():
        total[country] += n
    return dict(sorted(total.items()))
