"""Seeded page views (spread over the day) and user profiles."""

from __future__ import annotations

import random

COUNTRIES = ("US", "DE", "FR", "IN", "BR", "JP")
PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")
START_MS = 1_700_006_400_000  # an hour boundary


def profiles(users: int) -> list[dict]:
    return [{"user_id": f"user-{u}", "country": COUNTRIES[(u * 7) % len(COUNTRIES)]} for u in range(users)]


def page_views(count: int, *, users: int = 500, seed: int = 7, span_ms: int = 6 * 3_600_000) -> list[dict]:
    rng = random.Random(seed)
    step = span_ms / max(1, count)
    return [
        {"user_id": f"user-{rng.randrange(users)}", "page": rng.choice(PAGES), "ts": START_MS + int(i * step)}
        for i in range(count)
    ]
