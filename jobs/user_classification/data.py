"""Seeded signups: users with an IP address and a browser language."""

from __future__ import annotations

import random
from collections.abc import Iterator

from jobs.user_classification.classifier import LANGUAGE_COUNTRIES

LANGUAGES = tuple(LANGUAGE_COUNTRIES)


def signups(count: int, *, seed: int = 3, start_id: int = 0) -> Iterator[dict]:
    rng = random.Random(seed)
    for i in range(count):
        yield {
            "user_id": f"u{start_id + i}",
            "ip": f"{rng.randrange(1, 256)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            "language": rng.choice(LANGUAGES),
        }
