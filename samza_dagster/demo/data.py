"""Deterministic sample data for the demo (seeded, so a run's numbers can be checked)."""

from __future__ import annotations

import random
from collections.abc import Iterator

COUNTRIES = ("US", "DE", "FR", "IN", "BR", "JP")
PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")


def page_views(count: int, *, users: int = 500, seed: int = 7, start_ms: int = 1_700_000_000_000) -> Iterator[dict]:
    """``count`` page views by ``users`` users, one every 100 ms of event time."""
    rng = random.Random(seed)
    for i in range(count):
        user = rng.randrange(users)
        yield {
            "user_id": f"user-{user}",
            "country": COUNTRIES[user % len(COUNTRIES)],
            "page": rng.choice(PAGES),
            "ts": start_ms + i * 100,
        }
