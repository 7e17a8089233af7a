"""Errors raised while reading configuration."""

from samza_dagster.errors import SamzaError


class ConfigError(SamzaError, ValueError):
    """A configuration key is missing, malformed or inconsistent.

    The message always names the offending key (and the bad value when there is one),
    so a user can find it in their .properties file.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key
