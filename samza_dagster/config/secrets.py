"""Masking secret config values (passwords, SASL and SSL key material) wherever config is
shown: logs, the JobModel served over HTTP, plan output, Dagster metadata."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "********"
_SECRET_KEY = re.compile(r"(password|\.sasl\.|\.ssl\..*key|secret|token)", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def mask_config(config: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_key(k) else v) for k, v in config.items()}
