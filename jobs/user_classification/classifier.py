"""The two classification strategies (SAMZA-2's "statistical model", kept deterministic).

``ip``: the country registered for the address block. ``ip+language``: the same, except for
addresses of shared proxies / mobile carriers (blocks 200-255, whose registration says little
about the user), where the browser's language decides.
"""

from __future__ import annotations

STRATEGIES = ("ip", "ip+language")
BLOCK_COUNTRIES = ("US", "DE", "FR", "IN", "BR", "JP", "GB", "ES")
LANGUAGE_COUNTRIES = {
    "en-US": "US",
    "de-DE": "DE",
    "fr-FR": "FR",
    "hi-IN": "IN",
    "pt-BR": "BR",
    "ja-JP": "JP",
    "en-GB": "GB",
    "es-ES": "ES",
}
PROXY_BLOCKS = 200


def classify(user: dict, strategy: str) -> str:
    block = int(user["ip"].split(".", 1)[0])
    by_ip = BLOCK_COUNTRIES[block % len(BLOCK_COUNTRIES)]
    if strategy == "ip" or block < PROXY_BLOCKS:
        return by_ip
    return LANGUAGE_COUNTRIES.get(user["language"], by_ip)


def check_strategy(strategy: str | None) -> str:
    from samza_dagster.config import ConfigError

    if strategy not in STRATEGIES:
        raise ConfigError(
            f"app.classifier.strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}",
            key="app.classifier.strategy",
        )
    return strategy
