"""Seeded click events over whole UTC days, and what their daily aggregate must be."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta

from samza_dagster.config import Config

COUNTRIES = ("US", "DE", "FR", "IN", "BR")
PAGES = ("/", "/pricing", "/docs", "/blog")
DAY_MS = 86_400_000


def recent_days(count: int, today: date | None = None) -> list[date]:
    """The ``count`` whole UTC days before today, oldest first (the daily schedule's latest
    partitions, so the sample is there when it asks)."""
    today = today or datetime.now(UTC).date()
    return [today - timedelta(days=n) for n in range(count, 0, -1)]


def day_start_ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def clicks(days: Sequence[date], per_day: int, *, users: int = 200, seed: int = 40) -> list[dict]:
    """``per_day`` clicks in each of ``days``, times spread over the day (both edges inside it)."""
    rng = random.Random(seed)
    out = []
    for day in days:
        start = day_start_ms(day)
        for _ in range(per_day):
            out.append(
                {
                    "user_id": f"user-{rng.randrange(users)}",
                    "page": rng.choice(PAGES),
                    "country": rng.choice(COUNTRIES),
                    "ts": start + rng.randrange(DAY_MS),
                }
            )
    return out


def expected_daily(events: Iterable[dict], day: date) -> dict[tuple[str, str], tuple[int, int]]:
    """(country, page) → (clicks, distinct users) of ``day``'s events."""
    start = day_start_ms(day)
    counts: Counter[tuple[str, str]] = Counter()
    users: dict[tuple[str, str], set[str]] = {}
    for e in events:
        if start <= e["ts"] < start + DAY_MS:
            key = (e["country"], e["page"])
            counts[key] += 1
            users.setdefault(key, set()).add(e["user_id"])
    return {k: (n, len(users[k])) for k, n in counts.items()}


def load_clicks(config: Config, events: Sequence[dict], *, partitions: int = 2) -> int:
    """Create ``click_events`` if missing and append ``events`` (JSON, keyed by user: one user's
    clicks in one partition, in order); returns how many were written."""
    from jobs.stream_helpers import create_streams, produce

    create_streams(config, {"click_events": partitions})
    return produce(config, "click_events", ((e["user_id"].encode(), json.dumps(e).encode(), e["ts"]) for e in events))
