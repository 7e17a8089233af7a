"""Seeded ad traffic: a view every ~2 s of event time (hours of it), a few percent of them clicked
seconds to minutes later."""

from __future__ import annotations

import random

START_MS = 1_700_000_000_000


def ad_traffic(
    views: int,
    *,
    seed: int = 5,
    interval_ms: int = 2_000,
    click_rate: float = 0.1,
    ads: int = 200,
    window_ms: int = 300_000,
) -> tuple[list[dict], list[dict]]:
    """(views, clicks), each sorted by event time ``ts``; every click is 1 s to 4 min after its
    view (inside the 5-minute window)."""
    rng = random.Random(seed)
    step = interval_ms
    out_views, out_clicks = [], []
    for i in range(views):
        ts = START_MS + int(i * step + rng.random() * step)
        view = {"view_id": f"v{i}", "ad_id": f"ad-{rng.randrange(ads)}", "ts": ts}
        out_views.append(view)
        if rng.random() < click_rate:
            out_clicks.append(
                {
                    "view_id": view["view_id"],
                    "ad_id": view["ad_id"],
                    "ts": ts + rng.randrange(1_000, min(window_ms, 240_000)),
                }
            )
    out_views.sort(key=lambda v: v["ts"])
    out_clicks.sort(key=lambda c: c["ts"])
    return out_views, out_clicks
