"""Masking secret config values (passwords, SASL and SSL key material) wherever config is
shown: logs, the JobModel served over HTTP, plan output, Dagster metadata — and in text that
may quote them, such as a container's stderr or an exception message (:func:`scrub`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "********"
_SECRET_KEY = re.compile(r"(password|\.sasl\.|\.ssl\..*key|secret|token)", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def mask_config(config: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_key(k) else v) for k, v in config.items()}


def secrets_of(config: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``config`` whose values are secret."""
    return {k: v for k, v in config.items() if is_secret_key(k)}


def scrub(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every secret value replaced by the mask (values of 4 characters or more:
    shorter ones would mask ordinary words)."""
    for value in sorted({v for v in secrets.values() if v and len(v) >= 4}, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text
